"""A gate-duet.json as `gate run --design duet` writes it (gate.formats.duet_log), for tests that synthesize a duet."""
from __future__ import annotations

from pathlib import Path

from gate.formats import duet_log
from gate.formats.runlog import LoggedAction


def record(sessions: int, *, models: tuple[str, ...] = ("qwen3",), pairs: int = 1, seconds: float = 30.0,
           discarded: dict[int, str] | None = None) -> duet_log.DuetLog:
    """`sessions` completed sessions of `pairs` block pairs, each `seconds` of GPU time; `discarded`: session -> run."""
    made = []
    for s in range(1, sessions + 1):
        log = duet_log.DuetLog("", "", "", ("a", "b"), {}, 1, 1, pairs, {}, (), {})
        blocks = tuple(duet_log.Block(m, side, f"run{r}", 1.0) for m in models for r in log.session_runs(s)
                       for side in ("base", "cand"))
        gone = tuple(duet_log.Discarded(run, ("coverage",)) for k, run in (discarded or {}).items() if k == s)
        made.append(duet_log.Session(s, models, duet_log.SessionStatus.COMPLETED, blocks, gone, seconds))
    return duet_log.DuetLog(duet_log.SCHEMA, "duet", "duet: both servers resident", ("base", "cand"),
                            {"base": 30000, "cand": 30001}, min(sessions, 5), max(sessions, 5), pairs,
                            {m: 0.4 for m in models}, tuple(made),
                            {m: duet_log.Look(LoggedAction.PASS, ()) for m in models})


def write(tree: Path, log: duet_log.DuetLog) -> None:
    (Path(tree) / duet_log.FILE).write_text(duet_log.dumps(log), encoding="utf-8")
