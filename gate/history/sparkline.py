"""Unicode sparklines (▁▂▃▄▅▆▇█): a trend that renders in any terminal and in any GitHub comment."""
from __future__ import annotations

import math
from typing import Iterable, Sequence

BARS = "▁▂▃▄▅▆▇█"
GAP = " "  # a night without a value
BREAK = "│"  # drawn before the first night of a change point


def sparkline(values: Sequence[float | None], *, breaks: Iterable[int] = (), low: float | None = None,
              high: float | None = None) -> str:
    """One bar per value, scaled between `low` and `high` (default: the series' min and max; values outside
    are clipped); `breaks`: indices to mark with │ before them."""
    present = [v for v in values if v is not None and math.isfinite(v)]
    marks = set(breaks)
    if not present:
        return "".join((BREAK if i in marks else "") + GAP for i in range(len(values)))
    low = min(present) if low is None else low
    high = max(present) if high is None else high
    span = high - low
    out = []
    for i, v in enumerate(values):
        if i in marks:
            out.append(BREAK)
        if v is None or not math.isfinite(v):
            out.append(GAP)
        elif span == 0:
            out.append(BARS[len(BARS) // 2])
        else:
            out.append(BARS[max(0, min(len(BARS) - 1, int((v - low) / span * len(BARS))))])
    return "".join(out)
