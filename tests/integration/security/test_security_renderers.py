"""The fifty hostile strings (tests/helpers/hostile.py) through every renderer the gate publishes with: the PR
comment, the check run, the job summary, the nightly tracking issue (posted through the fake GitHub), a
change point's tracking issue and the dashboard pages (issue 22).

Each string is put in every free-text field it can reach (a report's side names and commits, utterance ids,
transcripts, reasons and notes; a history's commits; a change point's names), behind a unique tag. The
markdown is rendered by cmark-gfm with --unsafe (raw HTML kept as HTML), the pages are parsed as they are.
Inert means: the rendered structure (every element, its attributes and link targets, every HTML comment) is
exactly the structure of the same document with plain words in place of the string; no mention, reference or
math delimiter appears in the text that the plain words did not have; no control or bidi character; and no
absolute path of the machine that made the output. The tag must be visible: a string that was dropped
instead of shown would prove nothing.
"""
from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import html.parser
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from gate.formats.config import load_suite
from gate.history.analysis import trends
from gate.history.publish import publish_site
from gate.history.records import ChangePoint, Record
from gate.history.store import HistoryStore
from gate.publish import publication
from gate.publish.github import Publisher, connect
from gate.publish.posting import _nightly, render_section
from gate.publish.tracking import issue_body, issue_title
from gate.publish.untrusted import load_untrusted_report
from gate.render import renderer as render
from tests.helpers.fake_github import BOT, REPO, TOKEN, FakeGitHub
from tests.helpers.hostile import HOSTILE

pytestmark = pytest.mark.skipif(shutil.which("cmark-gfm") is None,
                                reason="cmark-gfm is not installed (apt-get install cmark-gfm)")
SUITE = load_suite()
BENIGN = "plain words"
SERVER = "https://github.test"
MARKDOWN = ("pr-comment", "check-run", "job-summary", "nightly-issue", "change-point-issue")
RENDERERS = (*MARKDOWN, "dashboard")
_ABSOLUTE = re.compile(r"(?<![\w.:/])/(?:tmp|home|root|work|runner|Users|var|opt|srv)/")
_NOTIFY = re.compile(r"@[A-Za-z0-9]|(?:^|[^\w&])#\d|GH-\d|[\w.-]+/[\w.-]+#\d", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u200e\u200f\u202a-\u202e\u2066-\u2069]")  # ZWSP: the escape's own breaker


# -- inputs ------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("hostile")


@pytest.fixture(scope="module")
def report_json(workdir):
    """A real report (qwen3's planted regression, judged by the real compare) as the JSON an artifact carries."""
    from gate.examples import write_example_pair
    from gate.judging.compare import compare
    from gate.reading.side_loader import load_side

    small = dataclasses.replace(SUITE, workloads=SUITE.workloads_for(("qwen3",)),
                                models={"qwen3": SUITE.models["qwen3"]}, labels={})
    base, cand = write_example_pair(workdir / "trees", small)
    report = compare(load_side(base, SUITE, ("qwen3",)), load_side(cand, SUITE, ("qwen3",)), SUITE, models=("qwen3",))
    return report.to_json()


def poisoned_report(report_json, value: str, path: Path):
    """`value` in every free-text field of the report (closed vocabularies such as `why` are refused by the reader
    when they hold anything else), read back through the untrusted report reader."""
    data = copy.deepcopy(report_json)
    for side in ("baseline", "candidate"):
        data[side]["name"] = value
        data[side]["commit"] = value
    for utterance in data["utterances"]:
        utterance.update(id=f"{value} {utterance['id']}", reference=f"{value} {utterance['reference']}",
                         candidate_hypothesis=f"{value} {utterance['candidate_hypothesis']}")
    for row in data["rows"]:
        row["notes"] = [*row.get("notes", []), value]
    # issue 35: a blocking difference's kind lands in the `--allow-diff` code span
    data["environment_diff"] = [*data.get("environment_diff", []), {
        "kind": value[:40], "workload": None, "item": value, "baseline": value, "candidate": value, "known": True,
        "blocking": True}]
    path.write_text(json.dumps(data), encoding="utf-8")
    return load_untrusted_report(path)


def step_of(value: str) -> list[ChangePoint]:
    return [ChangePoint(workload=value, metric=value, unit=value, log=True, worse=True, night=f"2026-10-02 {value}",
                        commit=value, previous_commit=value, reported="2026-10-04", before=98.0, after=92.0,
                        change=-0.061, ci=(-0.08, -0.04), p_value=1e-4, gated=True)]


def history_of(value: str, root: Path):
    """Twenty nights of qwen3/asr_en, the last one measured at commit `value`, through the store's writer and
    reader (what the dashboard job reads)."""
    first = dt.datetime(2026, 9, 1, 2, tzinfo=dt.timezone.utc)
    records = [Record(time=(first + dt.timedelta(days=i)).isoformat(), kind="nightly",
                      commit=value if i == 19 else f"{i:040x}", workload="qwen3/asr_en", runs=("run1", "run2", "run3"),
                      values={"corpus_wer": (0.0138,) * 3, "throughput_samples_per_s": (98.0 + i % 3, 98.5, 97.9)},
                      verdict="fail" if i == 19 else "pass", env="abc", runner_class="h100") for i in range(20)]
    store = HistoryStore(root, suite=SUITE)
    store.append(records, warn=None)
    history = store.read(warn=None)
    assert any(r.commit == value for r in history.records), "the reader dropped the night: nothing to show"
    return history


@pytest.fixture(scope="module")
def github():
    with FakeGitHub() as fake:
        yield fake, Publisher(connect(api_url=fake.base_url, token=TOKEN, retry=None), REPO,
                              bot_login=BOT)


def render_all(value: str, report_json, github, where: Path) -> dict[str, str]:
    """renderer -> what it publishes for `value` (markdown, or the dashboard's pages as one HTML text)."""
    where.mkdir(parents=True, exist_ok=True)
    report = poisoned_report(report_json, value, where / "report.json")
    section = render_section(report)
    plan = publication.model_check("qwen3", report, section, None)
    fake, publisher = github
    sha = f"{abs(hash(value)) % 16 ** 40:040x}"
    _nightly(publisher, report, sha=sha, details_url=f"{SERVER}/{REPO}/actions/runs/1", log=lambda _: None)
    [issue] = [i for i in fake.state.issues.values() if "asr-regression-gate: nightly" in i["body"]]
    step = step_of(value)
    out = {
        "pr-comment": render.render_comment(report),
        "check-run": f"{plan.title}\n\n{plan.summary}",
        "job-summary": render.render_summary(report),
        "nightly-issue": issue["body"],
        "change-point-issue": issue_body(step, repository=REPO, server_url=SERVER,
                                         chart_url=f"{SERVER}/pages/qwen3.html",
                                         run_url=f"{SERVER}/{REPO}/actions/runs/1"),
        "change-point-title": issue_title(step),  # GitHub shows an issue title as plain text, never markdown
    }
    site = where / "site"
    pages = publish_site(trends(history_of(value, where / "history"), SUITE), site, suite=SUITE, repository=REPO,
                         server_url=SERVER)
    out["dashboard"] = "\n".join(p.read_text(encoding="utf-8") for p in pages)
    return out


# -- what inert means ----------------------------------------------------------------------------------------

class Structure(html.parser.HTMLParser):
    """Every element with its attribute names and link targets, every comment, and the text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple] = []
        self.comments: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        names = tuple(sorted(name for name, _ in attrs))
        targets = tuple(sorted((n, v) for n, v in attrs if n in ("href", "src", "action", "xlink:href", "data")))
        self.elements.append((tag, names, targets))

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)

    def handle_comment(self, data):
        self.comments.append(data)

    def handle_data(self, data):
        self.text.append(data)


def as_html(renderer: str, output: str) -> str:
    if renderer not in MARKDOWN:
        return output
    return subprocess.run(["cmark-gfm", "--unsafe", "-e", "table", "-e", "autolink", "-e", "strikethrough",
                           "-e", "tasklist"], input=output, capture_output=True, text=True, check=True).stdout


def structure(renderer: str, output: str, tag: str, value: str) -> Structure:
    page = Structure()
    page.feed(as_html(renderer, output))
    page.close()
    page.text = ["".join(page.text).replace(tag, "TAG")]
    page.comments = [c.replace(tag, "TAG") for c in page.comments]
    return page


_BENIGN_STRUCTURES: dict[str, Structure] = {}


def _benign_structure(renderer: str, benign: str, tag: str) -> Structure:
    if renderer not in _BENIGN_STRUCTURES:
        _BENIGN_STRUCTURES[renderer] = structure(renderer, benign, tag, BENIGN)
    return _BENIGN_STRUCTURES[renderer]


@pytest.fixture(scope="module")
def rendered(report_json, github, workdir):
    """index -> (hostile outputs, benign outputs, tag): each string, and plain words, behind the same tag."""
    tag = "ZqTAGxV"
    benign = render_all(f"{tag} {BENIGN}", report_json, github, workdir / "benign")
    return {index: (render_all(f"{tag} {hostile}", report_json, github, workdir / f"h{index}"), benign, tag)
            for index, hostile in enumerate(HOSTILE)}


@pytest.mark.parametrize("renderer", RENDERERS)
@pytest.mark.parametrize("index", range(len(HOSTILE)), ids=[f"s{i:02d}" for i in range(len(HOSTILE))])
def test_a_hostile_string_is_shown_inert(rendered, workdir, renderer, index):
    hostile_outputs, benign_outputs, tag = rendered[index]
    output, benign = hostile_outputs[renderer], benign_outputs[renderer]
    got, want = structure(renderer, output, tag, HOSTILE[index]), _benign_structure(renderer, benign, tag)
    text = got.text[0]
    assert "TAG" in text, f"{renderer}: the string was dropped, not shown: nothing was tested"
    assert got.elements == want.elements, f"{renderer}: {HOSTILE[index]!r} changed the rendered structure: " \
        f"{sorted(set(got.elements) ^ set(want.elements))[:4]}"
    assert got.comments == want.comments, f"{renderer}: {HOSTILE[index]!r} added or changed an HTML comment"
    if renderer in MARKDOWN:  # what GitHub itself turns into notifications, links or math
        assert sorted(_NOTIFY.findall(text)) == sorted(_NOTIFY.findall(want.text[0])), \
            f"{renderer}: a live mention or reference from {HOSTILE[index]!r}: {_NOTIFY.findall(text)}"
        # GitHub finds math in the markdown source ($ as the entity &#36; is text): count the source's own.
        assert output.count("$") == benign.count("$"), f"{renderer}: a math delimiter from {HOSTILE[index]!r}"
    assert not _CONTROL.search(text), f"{renderer}: a control or bidi character from {HOSTILE[index]!r}"
    for document in (output, benign):
        assert str(workdir) not in document and not _ABSOLUTE.search(document), f"{renderer}: an absolute path"


@pytest.mark.parametrize("index", range(len(HOSTILE)), ids=[f"s{i:02d}" for i in range(len(HOSTILE))])
def test_a_tracking_issue_title_is_one_plain_line(rendered, index):
    """Titles are plain text on GitHub (no markdown, no HTML): what matters is one line, no control or bidi
    character, within GitHub's 256 characters."""
    title = rendered[index][0]["change-point-title"]
    assert rendered[index][2] in title and "\n" not in title and len(title) <= 256
    assert not _CONTROL.search(title), f"a control or bidi character from {HOSTILE[index]!r} in {title!r}"
