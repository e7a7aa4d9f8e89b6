"""GitHub's limits have one owner and one cut step: rendering and the API guard give the same cut."""
from __future__ import annotations

import ast
from pathlib import Path

import gate
from gate.formats import github_limits
from gate.formats.github_limits import CUT_NOTE, Limit, fit


def test_fit_keeps_whole_lines_the_head_and_the_tail_within_the_limit():
    text = "MARK\n" + "".join(f"line {i}\n" for i in range(100))
    cut = fit(text, Limit(120, "characters"), head="MARK\n", tail="\nEND")
    assert len(cut) <= 120
    assert cut.startswith("MARK\nline 0\n") and cut.endswith(CUT_NOTE + "\nEND")
    kept = cut[len("MARK\n"):-len(CUT_NOTE + "\nEND")]
    assert all(line.startswith("line ") for line in kept.split("\n"))  # no line cut in half


def test_fit_counts_bytes_without_splitting_a_character():
    cut = fit("词" * 100, Limit(200, "bytes"))
    assert len(cut.encode("utf-8")) <= 200 and cut.endswith(CUT_NOTE) and "\ufffd" not in cut


def test_a_text_that_fits_is_returned_unchanged():
    assert fit("short", github_limits.COMMENT) == "short"


def test_render_and_posting_never_import_pygithub_for_the_limits():
    """Rendering stays free of the API client: only gate.publish.github (and its callers) import PyGithub."""
    root = Path(gate.__file__).parent
    for module in ("render/renderer.py", "formats/github_limits.py", "publish/publication.py"):
        tree = ast.parse((root / module).read_text(encoding="utf-8"))
        imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        assert not {n for n in imported if n in ("github", "gate.publish.github") or n.startswith("github.")}, module


def test_no_second_definition_of_a_github_limit_or_cut_note():
    root = Path(gate.__file__).parent
    for path in root.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if path.name == "github_limits.py":
            continue
        assert "65_536" not in text and "65_535" not in text and "1_048_576" not in text, path
        assert "_Cut to fit" not in text, path
