"""The report's record of the two looks of `gate run --ab` (Report.looks), per model.

`from_run_log`: what the A/B job decided, read from the candidate tree's gate-run.json (`gate compare`):
the first look (3+3 runs: pass, fail or extend, and why), the pooled look when the model was extended,
or "one look" and why. The log is read strictly (gate.inputs, gate.schema): a log that is not what
`gate run` writes is one InputError line naming the file (exit 2).

`recomputed`: the trusted report job's own looks (`gate post --trees`), made from the trees alone with
the same decision functions, never read from the uploaded log.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from gate import inputs, schema
from gate.config import Suite
from gate.errors import InputError
from gate.report import MAX_TEXT, Look, ModelLooks, clip
from gate.results import RUN_LOG_FILE
from gate.schema import OBJECT, STRING, list_of, one_of, optional

FROM_LOG = "gate-run.json"
RECOMPUTED = "recomputed"
MAX_REASONS = 20  # Look.reasons holds at most this many


def from_run_log(tree: Path, suite: Suite, models: Sequence[str]) -> tuple[ModelLooks, ...]:
    """The looks gate-run.json records for `models`; () for a tree without a log or a log without a
    two-look plan (not an A/B run)."""
    log = Path(tree) / RUN_LOG_FILE
    if not Path(tree).is_dir() or not inputs.is_present(log):
        return ()
    doc = inputs.load_json(log, inputs.RUN_LOG, root=tree)
    try:
        return _looks(doc, Path(tree).name, suite, models)
    except schema.SchemaError as exc:
        raise InputError(f"{exc}; expected the run log `gate run --ab` writes (plan, looks, sides, scored_runs)",
                         path=log) from None


def recomputed(model: str, first_action: str, first_reasons: Sequence[str], found: Sequence[Sequence[str]],
               first_runs: Sequence[str], pooled: Any | None, not_extended: str | None) -> ModelLooks:
    """The trusted job's looks of one model: its first-look decision over `first_runs` of each tree (`found`:
    the scored runs of base, then candidate), and `pooled` (a LookDecision) when the plan extended."""
    base, cand = (tuple(runs) for runs in found)
    first = Look("first", first_action, _reasons(first_reasons), _count(base, first_runs), _count(cand, first_runs))
    if pooled is not None:
        second = Look("pooled", pooled.action, _reasons(pooled.reasons), len(base), len(cand))
        return ModelLooks(model, RECOMPUTED, (first, second), pooled.action)
    final = "undecided" if first_action == "extend" else first_action
    return ModelLooks(model, RECOMPUTED, (first,), final, note=_note(not_extended))


def _looks(doc: Any, side: str, suite: Suite, models: Sequence[str]) -> tuple[ModelLooks, ...]:
    OBJECT(doc, "top level")
    if schema.get_optional(doc, "plan", OBJECT) is None:
        return ()
    decider = schema.get_optional(doc, "plan.decider", STRING)
    one_look_because = schema.get_optional(doc, "plan.one_look_because", STRING)
    records = schema.get_optional(doc, "looks", OBJECT, {})
    base, cand = _sides(schema.get(doc, "sides", OBJECT), side)
    made = schema.get(doc, "scored_runs", OBJECT)
    first_runs = tuple(f"run{r}" for r in suite.scored_runs)
    out = []
    for model in models:
        record = records.get(model)
        if record is None:
            out.append(ModelLooks(model, FROM_LOG, (), "one look", note=_note(one_look_because)) if decider is None
                       else ModelLooks(model, FROM_LOG, (), "undecided",
                                       note="gate-run.json records no decision: the run ended before the first look"))
            continue
        where = f"looks.{model}"
        OBJECT(record, where)
        base_runs, cand_runs = _runs(made, base, model), _runs(made, cand, model)
        first = _look(record, where, "first", ("pass", "fail", "extend"),
                      _count(base_runs, first_runs), _count(cand_runs, first_runs))
        looks = [first]
        if record.get("pooled") is not None:
            looks.append(_look(record, where, "pooled", ("pass", "fail"), len(base_runs), len(cand_runs)))
        final = schema.get(record, "final", one_of("pass", "fail", "extend", "undecided"))
        note = schema.get_optional(record, "not_extended", STRING)
        out.append(ModelLooks(model, FROM_LOG, tuple(looks), "undecided" if final == "extend" else final,
                              note=_note(note)))
    return tuple(out)


def _look(record: Mapping, where: str, name: str, actions: tuple[str, ...], base_runs: int, cand_runs: int) -> Look:
    try:
        action = schema.get(record, f"{name}.action", one_of(*actions))
        reasons = schema.get(record, f"{name}.reasons", list_of(STRING))
    except schema.SchemaError as exc:
        raise schema.Invalid(f"{where}.{exc.field}", exc.message) from None
    return Look(name, action, _reasons(reasons), base_runs, cand_runs)


def _sides(sides: Mapping, own: str) -> tuple[str, str]:
    """(base side, candidate side) of the log: the tree's own directory name is the candidate; a renamed
    tree falls back to the log's order (base first, as `gate run --ab` writes it)."""
    names = list(sides)
    if len(names) != 2:
        raise schema.Invalid("sides", f"lists {len(names)} sides, expected the two of an A/B run")
    if own in names:
        return names[1 - names.index(own)], own
    return names[0], names[1]


def _runs(made: Mapping, side: str, model: str) -> tuple[str, ...]:
    per_model = made.get(side, {})
    OBJECT(per_model, "scored_runs")
    return tuple(optional(list_of(STRING))(per_model.get(model), f"scored_runs (side {clip(side, 40)!r}, {model})")
                 or ())


def _count(runs: Sequence[str], wanted: Sequence[str]) -> int:
    return sum(1 for run in runs if run in wanted)


def _reasons(reasons: Sequence[str]) -> tuple[str, ...]:
    return tuple(clip(r, MAX_TEXT) for r in list(reasons)[:MAX_REASONS])


def _note(text: str | None) -> str | None:
    return None if text is None else clip(text, MAX_TEXT)
