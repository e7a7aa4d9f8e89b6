"""`gate example` can be run twice (README's first command) and an interrupted run leaves nothing behind."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from gate import cli as cli_module
from gate.examples.folder import MARKER
from gate.reading.sample_cache import CACHE_DIR


def _digests(root: Path) -> dict[str, str]:
    """File -> content hash; baseline.json without its creation times (the only part that may differ)."""
    out = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file() and CACHE_DIR not in p.parts):
        data = path.read_bytes()
        if path.name == "baseline.json":
            doc = json.loads(data)
            doc.pop("created", None)
            doc.get("calibration_source", {}).pop("created", None)
            data = json.dumps(doc, sort_keys=True).encode()
        out[str(path.relative_to(root))] = hashlib.sha256(data).hexdigest()
    return out


@pytest.mark.slow  # runs `gate example` a second time
def test_second_run_rewrites_the_same_folder(example_out, invoke):
    out, first = example_out
    assert first.exit_code == 0
    before = _digests(out)
    again = invoke("example", out)
    assert again.exit_code == 0, again.stderr
    assert _digests(out) == before
    assert (out / MARKER).is_file()
    assert sorted(p.name for p in out.parent.iterdir() if p.name.startswith(".")) == []  # no staging left
    readme = (out / "README.txt").read_text()
    assert f"gate compare {out / 'baseline.json'} {out / 'candidate'}" in readme  # the final path, not staging
    assert json.loads((out / "baseline.json").read_text())["source"]["path"] == str(out / "baseline")


@pytest.mark.slow  # `gate example` twice per interruption
@pytest.mark.parametrize("interrupt, code", [(KeyboardInterrupt, 130), (RuntimeError("boom"), 70)])
def test_interrupted_run_leaves_the_old_folder(tmp_path, monkeypatch, capsys, interrupt, code):
    out = tmp_path / "out"
    out.mkdir()
    (out / MARKER).write_text("earlier\n")
    (out / "old.txt").write_text("previous example\n")

    def stop(*args, **kwargs):
        raise interrupt
    monkeypatch.setattr("gate.examples.write_example_baseline", stop)  # imported by the command when it runs
    assert cli_module.run(["example", str(out)]) == code
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no half-written sibling
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "old.txt"]
    assert capsys.readouterr().err.strip().count("\n") == 0  # one line (click prints a newline after ^C)
