"""The architecture's numbers, measured from the code (issue 34's review, repeatable).

    python scripts/architecture.py            # the figures, one per line
    python scripts/architecture.py --check    # exit 1 on an import cycle, an import chain over 10 levels, a
                                              # top-level module, a re-export module, prose asserts over 2%,
                                              # a note's text tested or edited in gate/, or a function of
                                              # gate/judging or gate/stats above radon complexity 25,
                                              # or more than 20 verdict-bearing constants there
                                              # (.ci/run runs it)

Figures: modules and lines, top-level modules besides `__init__`/`cli`, import cycles (function-level
imports included, as grimp sees them), the longest import chain in levels, public names defined in more
than one module, re-export-only modules, and the share of test asserts that compare against prose (a string
literal of 30 or more characters in the assert).
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import defaultdict
from pathlib import Path

import grimp
from radon.complexity import cc_visit

ROOT = Path(__file__).resolve().parent.parent
MAX_LEVELS = 10  # issue 34: the longest import chain, in modules (packages' __init__ left out)
MAX_PROSE_SHARE = 0.02
PROSE_CHARS = 30
TOP_LEVEL_ALLOWED = {"gate", "gate.cli"}
# Issue 49: the rule fits in a maintainer's head. No function of the verdict rule and the statistics above radon's
# cyclomatic complexity 25 (judge_speed was 81, compare 44).
MAX_COMPLEXITY = 25
COMPLEXITY_PACKAGES = ("gate/judging", "gate/stats")
# ... and at most 20 verdict-bearing named constants there: public module-level names bound to a number. A value
# derived from another (`FEWEST_RUNS + 1`) is not a knob of its own, and these bear on no verdict: the display, the
# duet planner's search, the runner's passes and the numerics' sizes (docs/statistics.md, "Rule ablation").
MAX_CONSTANTS = 20
# The noise records' module holds the one count the rules share (FEWEST_RUNS) and the calibration's df it derives.
CONSTANT_FILES = (*COMPLEXITY_PACKAGES, "gate/formats/noise_model.py")
NOT_VERDICT = {"SIGMA_FLOOR",  # the least σ a baseline file holds (numerics)
               "MAX_UTTERANCES_PER_ROW", "ADVISED_PAIRS", "DEFAULT_RATIO", "MAX_SESSIONS", "MAX_PASSES", "WARM_CYCLES",
               "MAX_EXACT_LATTICE", "DEFAULT_BOOTSTRAP", "DEFAULT_FLIPS"}


def import_graph() -> dict[str, set[str]]:
    graph = grimp.build_graph("gate", cache_dir=None)
    return {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def levels(edges: dict[str, set[str]]) -> tuple[int, list[str]]:
    """The longest import chain (in modules) and one chain of that length; packages' __init__ left out."""
    memo: dict[str, list[str]] = {}

    def chain(module: str, seen: frozenset[str]) -> list[str]:
        if module in memo:
            return memo[module]
        best: list[str] = []
        for child in edges.get(module, ()):
            if child in seen or _is_package(child):
                continue
            candidate = chain(child, seen | {child})
            if len(candidate) > len(best):
                best = candidate
        memo[module] = [module, *best]
        return memo[module]

    longest: list[str] = []
    for module in sorted(edges):
        if _is_package(module):
            continue
        found = chain(module, frozenset({module}))
        if len(found) > len(longest):
            longest = found
    return len(longest), longest


def _is_package(module: str) -> bool:
    return (ROOT / module.replace(".", "/") / "__init__.py").exists()


def module_files() -> dict[str, Path]:
    files = {}
    for path in sorted((ROOT / "gate").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        files[name] = path
    return files


def duplicate_public_names(files: dict[str, Path]) -> dict[str, list[str]]:
    defined: dict[str, list[str]] = defaultdict(list)
    for module, path in files.items():
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
                defined[node.name].append(module)
    return {name: modules for name, modules in sorted(defined.items()) if len(modules) > 1}


def reexport_modules(files: dict[str, Path]) -> list[str]:
    """Modules (not packages) whose body is only imports, an `__all__` and a docstring."""
    found = []
    for module, path in files.items():
        if path.name == "__init__.py":
            continue
        body = ast.parse(path.read_text(encoding="utf-8")).body
        kinds = {type(node) for node in body if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))}
        assigns = [n for n in body if isinstance(n, ast.Assign)]
        if kinds and kinds <= {ast.Import, ast.ImportFrom, ast.Assign} and all(
                any(isinstance(t, ast.Name) and t.id == "__all__" for t in a.targets) for a in assigns):
            found.append(module)
    return found


NOTE_NAMES = {"note", "notes"}  # a row's notes (Row.notes, Draft.notes) and one of them
TEXT_TESTS = {"startswith", "endswith", "removeprefix", "removesuffix"}


def _is_note_text(node: ast.AST, bound: set[str]) -> bool:
    """`node` is a note's text or the notes: `row.notes`, `note`, `notes[0]`, `"; ".join(row.notes)`, or a name a
    loop or comprehension over the notes binds (`bound`)."""
    if isinstance(node, ast.Name):
        return node.id in NOTE_NAMES or node.id in bound
    if isinstance(node, ast.Attribute):
        return node.attr in NOTE_NAMES
    if isinstance(node, ast.Subscript):
        return _is_note_text(node.value, bound)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "join":
        return any(_is_note_text(arg, bound) for arg in node.args)
    return False


def note_text_tests(source: str) -> list[int]:
    """Lines that select or edit a note by its text (issue 49: a row's reasons are typed, Row.cannot_fail and
    Row.warn_cause; notes are for people only): `note.startswith(...)`, `"..." in note`, `x in row.notes`, also
    through a name bound by a loop over the notes, within the same function."""
    tree = ast.parse(source)
    found: set[int] = set()
    for scope in [tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))]:
        bound = {node.target.id for node in ast.walk(scope) if isinstance(node, (ast.comprehension, ast.For))
                 and isinstance(node.target, ast.Name) and _is_note_text(node.iter, set())}
        for node in ast.walk(scope):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in TEXT_TESTS \
                    and _is_note_text(node.func.value, bound):
                found.add(node.lineno)
            elif isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops) \
                    and any(_is_note_text(c, bound) for c in node.comparators):
                found.add(node.lineno)
    return sorted(found)


def too_complex(source: str, limit: int = MAX_COMPLEXITY) -> list[tuple[str, int]]:
    """Functions and methods of `source` above `limit` in radon's cyclomatic complexity: (name, complexity)."""
    found = []
    for block in cc_visit(source):
        for item in [block, *getattr(block, "methods", ())]:
            if item.complexity > limit and getattr(item, "letter", "F") != "C":
                found.append((item.fullname, item.complexity))
    return found


def verdict_constants(source: str) -> list[str]:
    """The public module-level names of `source` bound to a numeric literal (a sign allowed), less NOT_VERDICT."""
    found = []
    for node in ast.parse(source).body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        value = getattr(node, "value", None)
        value = value.operand if isinstance(value, ast.UnaryOp) else value
        if not (isinstance(value, ast.Constant) and type(value.value) in (int, float)):
            continue
        found += [t.id for t in targets if isinstance(t, ast.Name) and t.id.isupper() and not t.id.startswith("_")
                  and t.id not in NOT_VERDICT]
    return found


def prose_asserts(tests: Path) -> tuple[int, int]:
    total = prose = 0
    for path in tests.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Assert):
                continue
            total += 1
            if any(isinstance(n, ast.Constant) and isinstance(n.value, str) and len(n.value) >= PROSE_CHARS
                   for n in ast.walk(node.test)):
                prose += 1
    return prose, total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when a limit is broken")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    edges = import_graph()
    files = module_files()
    lines = sum(len(p.read_text(encoding="utf-8").splitlines()) for p in files.values())
    top_level = sorted(m for m in files if m.count(".") == 1 and not _is_package(m) and m not in TOP_LEVEL_ALLOWED)
    found_cycles = cycles(edges)
    depth, chain = levels(edges)
    duplicates = duplicate_public_names(files)
    reexports = reexport_modules(files)
    prose, asserts = prose_asserts(ROOT / "tests")
    note_tests = [f"{module}:{line}" for module, path in files.items()
                  for line in note_text_tests(path.read_text(encoding="utf-8"))]
    complex_ = [f"{module}.{name} ({cc})" for module, path in files.items()
                if str(path.relative_to(ROOT)).startswith(COMPLEXITY_PACKAGES)
                for name, cc in too_complex(path.read_text(encoding="utf-8"))]
    constants = [f"{module.rsplit('.', 1)[1]}.{name}" for module, path in files.items()
                 if str(path.relative_to(ROOT)).startswith(CONSTANT_FILES)
                 for name in verdict_constants(path.read_text(encoding="utf-8"))]
    print(f"modules: {len(files)} ({lines:,} lines)")
    print(f"top-level modules besides __init__ and cli: {len(top_level)} {' '.join(top_level)}".rstrip())
    print(f"import cycles: {len(found_cycles)}")
    for component in found_cycles:
        print("  " + " <-> ".join(component))
    print(f"import levels: {depth} (limit {MAX_LEVELS}): {' -> '.join(chain)}")
    print(f"public names defined in more than one module: {len(duplicates)}")
    for name, modules in duplicates.items():
        print(f"  {name}: {', '.join(modules)}")
    print(f"re-export modules: {len(reexports)} {' '.join(reexports)}".rstrip())
    print(f"prose asserts: {prose} of {asserts} ({prose / max(asserts, 1):.1%}; limit {MAX_PROSE_SHARE:.0%})")
    print(f"note text tested or edited: {len(note_tests)} {' '.join(note_tests)}".rstrip())
    print(f"functions of {' and '.join(COMPLEXITY_PACKAGES)} above complexity {MAX_COMPLEXITY}: {len(complex_)} "
          f"{' '.join(complex_)}".rstrip())
    print(f"verdict-bearing constants in {', '.join(CONSTANT_FILES)}: {len(constants)} (limit {MAX_CONSTANTS}) "
          f"{' '.join(sorted(constants))}")
    broken = bool(top_level or found_cycles or depth > MAX_LEVELS or reexports or prose > MAX_PROSE_SHARE * asserts
                  or note_tests or complex_ or len(constants) > MAX_CONSTANTS)
    return 1 if args.check and broken else 0


if __name__ == "__main__":
    sys.exit(main())
