"""The README stays a landing page and the CHANGELOG's Unreleased section stays short (issue 51): detail goes to
docs/ and measurements to benchmarks/results/, linked."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
README_WORDS = 2500
UNRELEASED_BYTES = 8 * 1024


def test_the_readme_is_at_most_2500_words():
    words = len((ROOT / "README.md").read_text(encoding="utf-8").split())  # what `wc -w` counts
    assert words <= README_WORDS, f"README.md has {words} words (at most {README_WORDS}): move detail to docs/"


def test_the_readme_holds_the_adoption_list_and_the_five_verdicts():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    adopt = text.split("## Adopt it in sglang-omni", 1)[1].split("\n## ", 1)[0]
    steps = [int(n) for n in re.findall(r"^(\d+)\. \*\*", adopt, re.M)]
    assert steps == list(range(1, len(steps) + 1)) and len(steps) >= 9
    for needed in ("asr-gate", "deployment_branch_policy", "ASR_GATE_STAMP_KEY", "docs/github-app.md", "gh label create",
                   "asr-gate-accept", "config.sh", "HF_HUB_OFFLINE", "Pages", "docs/callers", "ASR gate"):
        assert needed in adopt, needed
    comment = text.split("## Reading the comment", 1)[1].split("\n## ", 1)[0]
    for verdict in ("PASS", "WARN", "FAIL", "INCOMPLETE", "NOT COMPARABLE"):
        assert re.search(rf"^\| \S+ {verdict} \|", comment, re.M), verdict


def test_the_unreleased_changes_are_short_and_sorted_by_kind():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    unreleased = text.split("## [Unreleased]", 1)[1].split("\n## [", 1)[0]
    size = len(unreleased.encode("utf-8"))
    assert size <= UNRELEASED_BYTES, f"CHANGELOG's Unreleased section is {size} bytes (at most {UNRELEASED_BYTES})"
    kinds = re.findall(r"^### (.+)$", unreleased, re.M)
    assert {"Added", "Changed", "Fixed"} <= set(kinds) <= {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}
