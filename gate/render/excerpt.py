"""Changed-utterance excerpts: where the candidate's transcript first differs from the baseline's, and the
changed words marked, each token escaped on its own (gate.render.escape)."""
from __future__ import annotations

import difflib
import re

from gate.formats.report import Utterance
from gate.render.cells import one_line
from gate.render.escape import md

# A token for marking changed words: one CJK character, or a run of anything else but whitespace.
_TOKEN = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]|[^\s\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]+")


def changed_words(utterance: Utterance, start: int, limit: int) -> tuple[str, str]:
    """The baseline and candidate hypotheses as escaped markdown excerpts (the same window as the
    reference's), with the words that differ marked: ~~struck~~ on the baseline (deleted or substituted),
    **bold** on the candidate (inserted or substituted)."""
    base, cand = one_line(utterance.baseline_hypothesis), one_line(utterance.candidate_hypothesis)
    base_tokens, cand_tokens = list(_TOKEN.finditer(base)), list(_TOKEN.finditer(cand))
    matcher = difflib.SequenceMatcher(None, [t.group() for t in base_tokens], [t.group() for t in cand_tokens],
                                      autojunk=False)
    base_changed: set[int] = set()
    cand_changed: set[int] = set()
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            base_changed.update(range(i1, i2))
            cand_changed.update(range(j1, j2))
    return (_marked(base, base_tokens, base_changed, "~~", start, limit),
            _marked(cand, cand_tokens, cand_changed, "**", start, limit))


def _marked(text: str, tokens: list[re.Match[str]], changed: set[int], wrap: str, start: int, limit: int) -> str:
    """md() of text[start:start+limit] token by token, each run of changed tokens wrapped in `wrap`."""
    if not text:
        return md(None)
    end = start + limit
    parts: list[str] = []
    run: list[str] = []
    previous_end = None
    for k, token in enumerate(tokens):
        if token.start() < start or token.end() > end:
            continue
        gap = "" if previous_end is None or token.start() == previous_end else " "
        previous_end = token.end()
        escaped = md(token.group())
        if k in changed:
            if not run:
                parts.append(gap)  # the space before a marked run stays outside the markers
                gap = ""
            run.append(gap + escaped)
            continue
        if run:
            parts.append(wrap + "".join(run) + wrap)
            run = []
        parts.append(gap + escaped)
    if run:
        parts.append(wrap + "".join(run) + wrap)
    body = "".join(parts).strip()
    return ("…" if start > 0 else "") + body + ("…" if end < len(text) else "")


def excerpt_start(utterance: Utterance, limit: int) -> int:
    """Where the excerpts of a changed utterance start: a little before the hypotheses first differ
    (or, when they do not, where the candidate first departs from the reference), so a long MOSS
    session shows the change instead of its unchanged first `limit` characters."""
    ref, base, cand = (one_line(t) for t in (utterance.reference, utterance.baseline_hypothesis,
                                               utterance.candidate_hypothesis))
    if max(len(ref), len(base), len(cand)) <= limit:
        return 0
    first = _first_difference(base, cand)
    if first is None:
        first = _first_difference(ref, cand) or 0
    return max(0, first - limit // 4)


def _first_difference(a: str, b: str) -> int | None:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))
