"""Every relative link in the README, CHANGELOG and docs/ resolves: the file exists and, where the link names an
anchor, the target page has a heading of that slug (GitHub's rule: lower-case, punctuation dropped, spaces to -)."""
from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PAGES = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md")),
         *sorted((ROOT / "benchmarks" / "results").glob("*.md"))]
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
INLINE_CODE = re.compile(r"`[^`\n]*`")
# Pages another change of the same release writes (issue 50): a link to one is checked once the page exists.
def slug(heading: str) -> str:
    """GitHub's heading anchor: markup and punctuation dropped (hyphens and underscores kept), spaces to hyphens."""
    text = re.sub(r"[`*_]{1,2}(?=\S)|(?<=\S)[`*_]{1,2}", "", heading.strip()).lower()
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    kept = "".join(c for c in text if c in "-_ " or unicodedata.category(c)[0] in "LN")
    return kept.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    out = set()
    for heading in re.findall(r"^#{1,6}\s+(.+?)\s*#*$", text, re.M):
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(page: Path) -> list[str]:
    text = INLINE_CODE.sub("", FENCE.sub("", page.read_text(encoding="utf-8")))
    return [m.group(1) for m in LINK.finditer(text)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    broken = []
    for target in links(page):
        if re.match(r"[a-z]+:", target):  # https:, mailto: — not checked offline
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading #{anchor} in {dest.relative_to(ROOT)}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


# Headings and the anchors GitHub makes of them
SLUGS = [("Troubleshooting: a new maintainer's 22 mistakes", "troubleshooting-a-new-maintainers-22-mistakes"),
         ("`gate run`: the runbook on one GPU", "gate-run-the-runbook-on-one-gpu"),
         ("The verdict under GPU noise (issue 21)", "the-verdict-under-gpu-noise-issue-21"), ("§Layers", "layers")]


@pytest.mark.parametrize(("heading", "anchor"), SLUGS)
def test_the_slug_rule_matches_githubs(heading, anchor):
    assert slug(heading) == anchor


def test_a_broken_link_is_found(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("# Top\n[a](p.md#top) [b](missing.md) [c](#nowhere) `[d](ignored.md)`\n", encoding="utf-8")
    assert links(page) == ["p.md#top", "missing.md", "#nowhere"]
    assert anchors(page) == {"top"}
