"""Fifty hostile strings: what an attacker with a fork (utterance ids, transcripts, tree names, notes) or a
poisoned history line (commits) would put in front of the gate's renderers. Each targets one way markdown
or HTML turns text into something active: raw HTML and its attributes, links and images, autolinks,
mentions and references that notify people, math, tables and blocks that break the layout, the gate's
own hidden markers, and characters that hide or reorder text."""
from __future__ import annotations

HOSTILE = (
    # raw HTML elements and attributes
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "<svg onload=alert(1)><circle r=9/></svg>",
    "<iframe src=https://evil.test></iframe>",
    "<a href=\"javascript:alert(1)\">click</a>",
    "<details open ontoggle=alert(1)><summary>x</summary></details>",
    "<body onload=alert(1)>",
    "<style>body{display:none}</style>",
    "<object data=https://evil.test/x.swf></object>",
    "<form action=https://evil.test><input type=submit></form>",
    "<meta http-equiv=refresh content=\"0;url=https://evil.test\">",
    "<base href=https://evil.test/>",
    "<div style=\"position:fixed;inset:0\">overlay</div>",
    "<textarea><img src=x onerror=alert(1)></textarea>",
    "<noscript><p title=\"</noscript><img src=x onerror=alert(1)>\">",
    "\"><img src=x onerror=alert(1)>",
    "'><svg/onload=alert(1)>",
    "</td></tr></table><img src=x onerror=alert(1)>",
    "</details></details><b>out</b>",
    "<!-- asr-regression-gate: sticky -->",
    "<!-- asr-gate-step: qwen3/asr_en:2026-01-01 -->",
    "<!--",
    "&lt;img src=x onerror=alert(1)&gt;",
    "&#60;script&#62;alert(1)&#60;/script&#62;",
    # markdown links, images, autolinks
    "[click](javascript:alert(1))",
    "![pixel](https://evil.test/track.png)",
    "[text][ref]\n\n[ref]: https://evil.test",
    "https://evil.test/phish",
    "www.evil.test",
    "<https://evil.test>",
    "mailto:victim@evil.test",
    "[![x](https://evil.test/i.png)](https://evil.test)",
    # notifications and references
    "@sgl-project/maintainers",
    "@everyone please look",
    "fixes #1",
    "GH-12 and sgl-project/sglang-omni#7",
    "abc1234def5678 (a sha GitHub would link)",
    # math, layout and blocks
    "$$\\href{https://evil.test}{x}$$",
    "$x$ and $$y$$",
    "a | b | c\n|---|---|",
    "\n# Heading\n",
    "> quoted\n> more",
    "```\ncode fence\n```",
    "    indented code",
    "- [x] task",
    "***\n---\n___",
    # characters that hide, reorder or recolour text
    "\u202eevil\u202c",
    "\x1b[31mred\x1b[0m",
    "zero\u200bwidth\u2066isolate\u2069",
    "null\x00byte\x07bell",
)

assert len(HOSTILE) == 50 and len(set(HOSTILE)) == 50
