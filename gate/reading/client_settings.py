"""One tree, one client command line: a tree whose scored runs ran a workload's client with different settings
(run2 at concurrency 8, the others at 32) is refused where it is made, by `gate summarize` and `gate baseline
create`, in one line naming the run and the setting. Stored, such a tree becomes a baseline whose settings read
"32 | 8", and every later comparison against it is NOT COMPARABLE for a reason nobody chose (issue 51)."""
from __future__ import annotations

from collections import Counter

from gate.formats.errors import InputError
from gate.formats.result_types import ResultTree
from gate.reading.comparability import CLIENT, WORKLOAD_FACTS

# concurrency, request rate, ...; not `stream`: a run that did not stream where the suite streams (or the reverse)
# is INCOMPLETE by the stream-run check (gate.reading.result_files), with the `--stream` fix in its one line
SETTINGS = tuple(name for name, kind in WORKLOAD_FACTS.items() if kind == CLIENT and name != "stream")


def refuse_mixed_client_settings(tree: ResultTree) -> None:
    """InputError (exit 2) at the first workload whose runs recorded two values of one client setting; the run
    named is the one that differs from the most runs."""
    for workload_id, runs in tree.workloads.items():
        for name in SETTINGS:
            recorded = [(r.run, value) for r in runs if (value := getattr(r.provenance, name)) is not None]
            counts = Counter(value for _, value in recorded)
            if len(counts) < 2:
                continue
            usual = counts.most_common(1)[0][0]
            odd_run, odd = next((run, value) for run, value in recorded if value != usual)
            others = [run for run, value in recorded if value == usual]
            raise InputError(f"{odd_run} ran {workload_id} with {name} {_shown(odd)}, {' and '.join(others)} with "
                             f"{name} {_shown(usual)}: the runs of one tree must share the client settings the "
                             f"runbook fixes; measure {odd_run} again with {name} {_shown(usual)}", path=tree.root)


def _shown(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)
