"""The dashboard's pages come from Jinja templates with autoescape: a value is escaped by the one HTML escape
(controls and bidi characters removed too) wherever a template shows it; only markup passed as Markup is kept."""
from __future__ import annotations

from markupsafe import Markup

from gate.history.publish import Link, _html


def _commit(link):
    return _html().get_template("_dashboard.html.j2").module.commit(link)


def test_the_environment_autoescapes():
    assert _html().autoescape is True


def test_a_commit_link_escapes_its_text_and_target():
    assert str(_commit(None)) == "?"
    assert str(_commit(Link("abc123"))) == "<code>abc123</code>"
    shown = str(_commit(Link('<b>"x"</b>\u202e', 'https://e.test/"><script>')))
    assert "<b>" not in shown and "<script>" not in shown and "\u202e" not in shown
    assert shown == '<a href="https://e.test/&quot;&gt;&lt;script&gt;"><code>&lt;b&gt;&quot;x&quot;&lt;/b&gt;</code></a>'


def test_markup_the_gate_drew_passes_as_it_is():
    template = _html().from_string("{{ svg }}|{{ text }}")
    assert template.render(svg=Markup("<svg></svg>"), text="<svg>") == "<svg></svg>|&lt;svg&gt;"
