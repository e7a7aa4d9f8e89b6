"""CPU time of each test of the suite, to see where `.ci/run`'s time goes (issue 49). A pytest plugin, then a summary:

    CPUPROF_DIR=/tmp/cpuprof PYTHONPATH=benchmarks python -m pytest -q -n 3 -m "not timed" -p suite_cpu
    python benchmarks/suite_cpu.py /tmp/cpuprof            # per file: wall, own CPU, children's CPU, tests

Per test (setup, call and teardown together): wall time, the worker's own user + sys CPU, and that of the child
processes it waited for (a `gate run` and the servers it reaped, a fresh clone's pip). CPU barely depends on the
machine's load; wall does. One JSON line per test in CPUPROF_DIR/<xdist worker>.jsonl."""
from __future__ import annotations

import collections
import json
import os
import resource
import sys
import time
from pathlib import Path

import pytest


def _cpu() -> tuple[float, float]:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    start, (own, children) = time.monotonic(), _cpu()
    yield
    own_end, children_end = _cpu()
    folder = Path(os.environ.get("CPUPROF_DIR", "/tmp/cpuprof"))
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.jsonl", "a", encoding="utf-8") as out:
        out.write(json.dumps({"id": item.nodeid, "wall": time.monotonic() - start, "self": own_end - own,
                              "children": children_end - children}) + "\n")


def main(folder: str, most: int = 40) -> None:
    by_file: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0, 0.0, 0])
    for path in Path(folder).glob("*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            test = json.loads(line)
            row = by_file[test["id"].split("::")[0]]
            row[0] += test["wall"]
            row[1] += test["self"]
            row[2] += test["children"]
            row[3] += 1
    total = [sum(row[i] for row in by_file.values()) for i in range(3)]
    print(f"all tests: wall {total[0]:.0f} s, own CPU {total[1]:.0f} s, children's CPU {total[2]:.0f} s")
    print(f"{'wall':>7} {'own':>7} {'child':>7} {'tests':>5}  file")
    for name, (wall, own, children, count) in sorted(by_file.items(), key=lambda kv: -(kv[1][1] + kv[1][2]))[:most]:
        print(f"{wall:7.1f} {own:7.1f} {children:7.1f} {count:5d}  {name}")


if __name__ == "__main__":
    main(*sys.argv[1:2])
