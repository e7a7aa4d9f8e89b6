"""The one escape filter for every string that came from outside the trusted code (artifacts, result trees).

`md` makes a string inert in GitHub-flavoured markdown: no HTML, no links or autolinks, no images, no
@mentions, no issue/PR references (#123, GH-123, owner/repo#123), no `$`/`$$` math, no table breaks,
no line structure, no control or bidirectional-override characters. `plain` is the terminal/log
variant; `annotation` is the variant for Actions workflow-command messages (`::error::...`).
Templates apply these to outside strings only; numbers are formatted from numbers, never from text.

Why each rule (GitHub renders after the CommonMark parse, so both levels matter):
- HTML and `&` become entities, markdown punctuation is backslash-escaped: nothing parses as markup.
- GitHub turns `@name`, `#12`, `GH-12` and URLs into links in *text nodes*, after parsing, so a
  backslash does not stop them; a zero-width space (U+200B) inserted after `@`, `#`, `GH-`, `://`
  and `www.` does (zero-width spaces in the input are removed first, so only ours remain).
- GitHub math is found by scanning for `$` delimiters in the source; the entity `&#36;` is a
  literal dollar sign that is never a delimiter.
"""
from __future__ import annotations

import re
from typing import Any

# C0/C1 controls (ESC starts ANSI sequences), zero-width and joiner characters, bidi embeddings,
# overrides and isolates (Trojan Source), the BOM and Arabic letter mark.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")
_CONTROL_KEEP_LINES = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")
_SPACE = re.compile(r"[\s\x00-\x1f]+")
# Inline markdown punctuation (CommonMark allows a backslash before any ASCII punctuation).
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")
# An ordered-list marker is digits, then `.` or `)`, then a space or the end: its punctuation is escaped ("1\\. x"),
# never the digit (a backslash before a digit is no escape: "5.8% slower" showed as "\\5.8% slower").
_LINE_START = re.compile(r"^([#>\-+=])")
_LIST_NUMBER = re.compile(r"^(\d+)([.)])(?=\s|$)")
_ZWSP = "\u200b"
CUT = "…"  # the visible marker of a string cut to fit


def _clean(value: Any) -> str:
    """One line: controls and bidi characters removed, whitespace runs collapsed."""
    text = _CONTROL.sub("", str(value).replace("\t", " ").replace("\n", " ").replace("\r", " "))
    return _SPACE.sub(" ", text).strip()


def _clip(text: str, limit: int | None) -> str:
    if limit is not None and len(text) > limit:
        return text[: max(limit - len(CUT), 0)] + CUT
    return text


def md(value: Any, limit: int | None = None) -> str:
    """An outside string as inert inline markdown (table-cell safe). None renders as an em dash."""
    if value is None:
        return "—"
    text = _clip(_clean(value), limit)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _MD_SPECIAL.sub(r"\\\1", text)
    text = _LINE_START.sub(r"\\\1", text)  # never a heading, quote, list or setext underline
    text = _LIST_NUMBER.sub(r"\1\\\2", text)
    text = re.sub(r"@(?=\w)", "@" + _ZWSP, text)
    text = re.sub(r"#(?=\w)", "#" + _ZWSP, text)
    text = re.sub(r"\b(GH)-(?=\d)", r"\1-" + _ZWSP, text, flags=re.IGNORECASE)
    text = text.replace("://", ":" + _ZWSP + "//")
    text = re.sub(r"(www)\.", r"\1" + _ZWSP + ".", text, flags=re.IGNORECASE)
    return text.replace("$", "&#36;")  # last: the entity's own '#' must not get a zero-width space


# Inside a code span nothing is markup, but a backtick ends the span (and what follows is live markdown); a
# table's `|` still splits the cell; `$` may still open math. Only these characters stay as they are.
_CODE_UNSAFE = re.compile(r"[^A-Za-z0-9 _.,:=/+-]")


def code(value: Any, limit: int | None = None) -> str:
    """An outside string for the inside of a code span: one line, every character outside a small safe set
    (letters, digits, space and `_.,:=/+-`) shown as `?`, so nothing can end the span or mean anything."""
    if value is None:
        return "-"
    text = _CODE_UNSAFE.sub("?", _clip(_clean(value), limit))
    return re.sub(r"\b(GH)-(?=\d)", r"\1-" + _ZWSP, text, flags=re.IGNORECASE)  # as in md(): never a reference


def md_excerpt(value: Any, start: int, limit: int) -> str:
    """md() of a window of `limit` characters from `start`; a leading ellipsis marks a cut-off head."""
    if value is None:
        return md(None)
    text = _clean(value)
    if start <= 0 or len(text) <= limit:
        return md(text, limit)
    return CUT + md(text[start:], limit - 1)


def html_text(value: Any) -> str:
    """Text for an HTML page (the dashboard): controls and bidi characters removed, then HTML-escaped
    (quotes too, so it is safe inside an attribute). Whitespace is kept as it is."""
    import html

    return html.escape(_CONTROL.sub("", str(value)), quote=True)


def plain(value: Any, limit: int | None = None) -> str:
    """A single line for the terminal or a log: controls (ANSI escapes too) and bidi characters removed."""
    if value is None:
        return "-"
    return _clip(_clean(value), limit)


def annotation(value: Any, limit: int | None = None) -> str:
    """Text for an Actions workflow command (`::error title=...::MESSAGE`).

    Controls and bidi characters are removed (an ESC or U+202E in a log line can hide or reorder
    what a reader sees); line breaks are kept as the protocol's %0D/%0A and `%` is escaped, as in
    actions/toolkit's command.js.
    """
    text = _clip(_CONTROL_KEEP_LINES.sub("", "" if value is None else str(value)), limit)
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def annotation_property(value: Any, limit: int | None = None) -> str:
    """A property value (title=...): additionally `:` and `,`, which delimit properties."""
    return annotation(value, limit).replace(":", "%3A").replace(",", "%2C")
