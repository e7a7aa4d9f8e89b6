"""Tests an attacker would write: the trusted report job against crafted artifacts, through the loopback fake.

The artifact is whatever the labelled PR's code wrote; these tests check that nothing in it decides
what the bot publishes: verdict, comment, marker, binding to the PR, other models' results.
"""
from __future__ import annotations

import functools
import html.parser
import json
import re
import shutil
import subprocess
import threading

import pytest

from gate.formats.config import load_suite
from gate.publish import posting, publication
from gate.publish.posting import judge_uploaded, render_section
from gate.publish.trust import Authority
from gate.publish.untrusted import UntrustedInputError, check_consistency
from tests.helpers.fake_github import BOT, STAMP_KEY
from tests.helpers.gh_trees import MERGE_BASE, make_trees
from tests.helpers.runs import copy_run

HEAD = "a" * 40
SUITE = load_suite()
# The trusted job with its stamp key: judgements of other runs count once proven (tests/github/test_gh_forgery.py
# covers the job without one).
KEYED = Authority(key=STAMP_KEY)
post_model = functools.partial(posting.post_model, authority=KEYED)
post_not_run = functools.partial(posting.post_not_run, authority=KEYED)
HOSTILE = ("$$x$$ $y$ @team GH-12 #4 <img src=x onerror=alert(1)> </details></table> @sgl-project/maintainers "
           "@everyone sgl-project/sglang-omni#7 ![i](https://evil.test/i.png) [l](https://evil.test) https://evil.test "
           "www.evil.test <!-- asr-regression-gate: sticky --> \x1b[31m\u202eevil\u202c | --- |"
           "\n# heading\n<script>alert(1)</script> `tick` <!--")


@pytest.fixture(scope="session")
def pristine(tmp_path_factory, example_reports):
    root = tmp_path_factory.mktemp("pristine-trees")
    return {m: make_trees(root / m, example_reports, m) for m in ("qwen3", "whisper")}


@pytest.fixture
def trees(tmp_path, example_reports, pristine):
    """A fresh copy of one model's uploaded trees (tests edit them); `runs` rewrites the run log."""
    count = [0]

    def build(model, **kw):
        count[0] += 1
        dest = tmp_path / f"trees-{model}-{count[0]}"
        if kw:
            return make_trees(dest, example_reports, model, **kw)
        return shutil.copytree(pristine[model], dest)
    return build


def post(publisher, model, tree, *, pr=42, sha=HEAD, run=None):
    """What `gate post --trees` does: judge, hold the trees to GitHub's records, then bind and publish."""
    lines = []
    report, refused = None, None
    try:
        report = judge_uploaded(tree, model, SUITE, baseline=None, calibration=None)
        check_consistency(tree, SUITE, model, head_sha=sha, base_sha=MERGE_BASE, ab=True)
    except UntrustedInputError as exc:
        report, refused = None, str(exc)
    section = render_section(report) if report is not None else publication.refused_section(refused)
    outcome = post_model(publisher, SUITE, pr, sha=sha, model=model, report=report, section=section,
                         details_url=None, log=lines.append, refused=refused, run=run)
    return outcome.posted, report, lines


def sticky(fake, pr=42):
    mine = [c for c in fake.comments_on(pr) if c["user"] == BOT]
    assert len(mine) == 1, f"expected one sticky comment, found {len(mine)}"
    return mine[0]["body"]


def checks(fake, sha=HEAD):
    """Latest conclusion per check name."""
    latest = {}
    for run in fake.check_runs_on(sha):
        latest[run["name"]] = run
    return {name: run["conclusion"] for name, run in latest.items()}


# -- the verdict is the trusted compare's -------------------------------------------------------------

@pytest.mark.slow  # whole trusted job on forged artifacts
def test_forged_verdict_and_report_in_the_artifact_change_nothing(fake, publisher, trees):
    tree = trees("qwen3")
    forged = {"verdict": "pass", "suite": "evil", "rows": [], "models": ["qwen3"]}
    (tree / "report.json").write_text(json.dumps(forged))  # the old protocol's file: never read
    (tree / "candidate" / "report.json").write_text(json.dumps(forged))
    fake.add_pull(42, labels=("run-qwen3-asr",))
    posted, report, _ = post(publisher, "qwen3", tree)
    assert posted and report.verdict.value == "fail"  # the synthetic candidate carries a planted regression
    assert checks(fake) == {"ASR gate / qwen3": "failure", "ASR gate": "failure"}
    body = sticky(fake)
    assert body.count("<!-- asr-regression-gate") == 1 and body.startswith(publication.STICKY_MARKER)


def test_extra_run_is_refused_and_published_as_a_failure(fake, publisher, trees):
    tree = trees("qwen3")
    copy_run(tree / "candidate" / "run1", tree / "candidate" / "run4")  # best-of-four cherry-picking
    # The first look, recomputed here from run1..run3 of both trees, did not ask for a run4.
    # Refused by the run-log reader first: the log of the job lists run1..run3, not the planted run4.
    with pytest.raises(UntrustedInputError, match=r"lists run1, run2, run3 but not run4, which holds results"):
        judge_uploaded(tree, "qwen3", SUITE, baseline=None, calibration=None)
    fake.add_pull(42, labels=("run-qwen3-asr",))
    reason = "tree holds run directories ..."
    assert post_model(publisher, SUITE, 42, sha=HEAD, model="qwen3", report=None, refused=reason,
                      section=publication.refused_section(reason), details_url=None, log=lambda _: None).posted
    assert checks(fake)["ASR gate / qwen3"] == "failure" and "refused" in sticky(fake)


def test_run_log_must_list_every_planned_run(trees):
    with pytest.raises(UntrustedInputError, match="lists run1, run2 but not run3, which holds results"):
        judge_uploaded(trees("qwen3", runs=("runwarm", "run1", "run2")), "qwen3", SUITE, baseline=None, calibration=None)


def test_symlink_in_a_tree_is_refused(trees, tmp_path):
    tree = trees("qwen3")
    secret = tmp_path / "credentials"
    secret.write_text("token")
    target = next((tree / "candidate" / "run1" / "qwen3").glob("*.json"))
    target.unlink()
    target.symlink_to(secret)
    with pytest.raises(UntrustedInputError, match="symbolic link"):
        judge_uploaded(tree, "qwen3", SUITE, baseline=None, calibration=None)


# -- binding to the trigger ----------------------------------------------------------------------------

def overall(fake, sha=HEAD):
    """The latest overall check run on `sha`."""
    return [r for r in fake.check_runs_on(sha) if r["name"] == "ASR gate"][-1]


def test_no_label_publishes_no_result_and_says_why_in_the_overall_check(fake, publisher, trees):
    fake.add_pull(42)  # labels: []
    posted, _, lines = post(publisher, "qwen3", trees("qwen3"))
    assert not posted and not fake.comments_on(42)
    assert checks(fake) == {"ASR gate": "action_required"}
    assert overall(fake)["output"]["title"].startswith("refused: not bound: qwen3")
    assert any("no gate label selecting it" in line for line in lines)


def test_a_label_for_another_model_does_not_bind(fake, publisher, trees):
    fake.add_pull(42, labels=("run-whisper-asr",))
    posted, _, _ = post(publisher, "qwen3", trees("qwen3"))
    assert not posted and "ASR gate / qwen3" not in checks(fake)


def test_push_after_the_label_keeps_the_result_on_the_commit_measured(fake, publisher, trees):
    fake.add_pull(42, labels=("run-qwen3-asr",))
    new_head = "e" * 40
    fake.push(42, new_head)
    posted, _, lines = post(publisher, "qwen3", trees("qwen3"))
    assert not posted and any(line.startswith("stale") for line in lines)
    measured = [r for r in fake.check_runs_on(HEAD) if r["name"] == "ASR gate / qwen3"]
    assert len(measured) == 1 and measured[0]["output"]["title"].startswith(f"not the PR head (now {new_head[:12]})")
    assert measured[0]["external_id"].startswith("asr-gate:stale:")  # never counted for the PR
    assert "ASR gate" not in checks(fake)  # no overall check on a commit that is not the head
    assert checks(fake, "e" * 40) == {"ASR gate": "action_required"}  # the new head: label again
    assert not fake.comments_on(42)


@pytest.mark.slow  # whole trusted job several times against the GitHub fake
def test_fork_label_from_before_the_head_commit_does_not_bind(fake, publisher, trees):
    # Labelled at an earlier commit, then the fork pushed HEAD (with its own workflow): no label at HEAD.
    fake.add_pull(42, labels=("run-qwen3-asr",), head_sha="d" * 40, head_repo="contributor/sglang-omni")
    fake.push(42, HEAD)
    posted, _, lines = post(publisher, "qwen3", trees("qwen3"))
    assert not posted and any("after the head commit arrived" in line for line in lines)
    fake.add_label(42, "run-qwen3-asr")  # a maintainer labels HEAD: now it binds
    assert post(publisher, "qwen3", trees("qwen3"))[0]


@pytest.mark.slow  # whole trusted job several times against the GitHub fake
def test_new_commits_on_a_same_repo_pr_need_the_label_again(fake, publisher, trees):
    fake.add_pull(42, labels=("run-qwen3-asr",), head_sha="d" * 40)
    fake.push(42, HEAD)  # the label is still on the PR, but it was added to the earlier head
    assert not post(publisher, "qwen3", trees("qwen3"))[0]
    fake.remove_label_as(42, "run-qwen3-asr", actor="maintainer")
    fake.add_label(42, "run-qwen3-asr")
    assert post(publisher, "qwen3", trees("qwen3"))[0]
    assert "run-qwen3-asr" not in fake.state.labels[42]  # one-shot label removed after posting


# -- one comment, a check per model --------------------------------------------------------------------

@pytest.mark.slow  # whole trusted job twice per order against the GitHub fake
@pytest.mark.parametrize("order", [("qwen3", "whisper"), ("whisper", "qwen3")])
def test_two_models_in_either_order_leave_one_comment_showing_both(fake, publisher, trees, order):
    fake.add_pull(42, labels=("run-qwen3-asr", "run-whisper-asr"))
    for model in order:
        assert post(publisher, model, trees(model))[0]
    assert checks(fake) == {"ASR gate / qwen3": "failure", "ASR gate / whisper": "success", "ASR gate": "failure"}
    body = sticky(fake)
    table = body.split("\n\n")[1].splitlines()  # the first table: one row per model
    assert len(table) == 4 and "qwen3" in table[2] and "failure" in table[2]
    assert "whisper" in table[3] and "success" in table[3]
    assert f"### {order[-1]} (judged in this run)" in body


@pytest.mark.slow  # two trusted jobs at once against the GitHub fake
def test_two_concurrent_report_runs_converge(fake, publisher, trees):
    from gate.publish.github import Publisher, connect
    from tests.helpers.fake_github import REPO, TOKEN

    fake.add_pull(42, labels=("run-qwen3-asr", "run-whisper-asr"))
    built = {m: trees(m) for m in ("qwen3", "whisper")}
    reports = {m: judge_uploaded(built[m], m, SUITE, baseline=None, calibration=None) for m in built}
    gate = threading.Barrier(2)
    errors = []

    def one(model):
        try:
            own = Publisher(connect(api_url=fake.base_url, token=TOKEN, retry=None), REPO,
                            bot_login=BOT)
            gate.wait()
            post_model(own, SUITE, 42, sha=HEAD, model=model, report=reports[model],
                       section=render_section(reports[model]), details_url=None, log=lambda _: None)
        except Exception as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(m,)) for m in built]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    body = sticky(fake)
    assert "| qwen3 | ❌ failure" in body and "| whisper | ✅ success" in body
    assert checks(fake)["ASR gate"] == "failure"


@pytest.mark.slow  # whole trusted job several times against the GitHub fake
def test_a_labelled_model_without_results_keeps_the_overall_check_from_passing(fake, publisher, trees):
    # A fork's edited workflow uploads only the passing model; the label asked for both.
    fake.add_pull(42, labels=("run-qwen3-asr", "run-whisper-asr"))
    assert post(publisher, "whisper", trees("whisper"))[0]
    assert checks(fake) == {"ASR gate / whisper": "success", "ASR gate": "action_required"}
    assert "| qwen3 | ⏳ not judged |" in sticky(fake)


def test_labelled_head_with_no_results_at_all_is_not_a_pass(fake, publisher):
    fake.add_pull(42, labels=("run-qwen3-asr",))  # the run uploaded no run metadata: nothing to judge
    post_not_run(publisher, SUITE, 42, sha=HEAD, required_paths=(), details_url=None, log=lambda _: None)
    assert checks(fake) == {"ASR gate": "action_required"}


# -- acceptance ----------------------------------------------------------------------------------------

def test_acceptance_by_a_user_without_write_access_changes_nothing(fake, publisher, trees):
    fake.add_pull(42, labels=("run-qwen3-asr",))
    fake.state.permissions["mallory"] = "triage"
    fake.comment_as(42, "/asr-gate accept qwen3 looks fine to me", user="mallory")
    posted, _, lines = post(publisher, "qwen3", trees("qwen3"))
    assert posted and checks(fake)["ASR gate / qwen3"] == "failure"
    assert any("@mallory (triage)" in line and "cannot accept" in line for line in lines)
    assert "accepted by" not in sticky(fake).lower() and "regression accepted" not in sticky(fake).lower()


def test_acceptance_by_a_writer_turns_the_check_green_and_keeps_the_fail_rows(fake, publisher, trees):
    fake.add_pull(42, labels=("run-qwen3-asr",))
    fake.state.permissions["alice"] = "write"
    reason = "the new decoder trades 1% WER for 2x speed"
    fake.comment_as(42, f"/asr-gate accept qwen3 {reason}", user="alice")
    assert post(publisher, "qwen3", trees("qwen3"))[0]
    assert checks(fake) == {"ASR gate / qwen3": "success", "ASR gate": "success"}
    title = [r for r in fake.check_runs_on(HEAD) if r["name"] == "ASR gate / qwen3"][-1]["output"]["title"]
    assert title.startswith("accepted by @alice at ") and title.split(" at ", 1)[1].startswith("2026-12-01T09:0")
    assert f": {reason} (FAIL:" in title  # the reason, then the trusted verdict's counts
    body = sticky(fake)
    assert "Regression accepted" in body and "FAIL" in body and "❌" in body


@pytest.mark.slow  # whole trusted job several times against the GitHub fake
def test_accept_label_counts_only_from_a_writer(fake, publisher, trees):
    fake.add_pull(42, labels=("run-qwen3-asr",))
    fake.add_label(42, "asr-gate-accept", actor="mallory")
    post(publisher, "qwen3", trees("qwen3"))
    assert checks(fake)["ASR gate / qwen3"] == "failure"
    fake.state.permissions["maintainer"] = "maintain"
    fake.add_label(42, "asr-gate-accept", actor="maintainer")
    post(publisher, "qwen3", trees("qwen3"))
    assert checks(fake)["ASR gate / qwen3"] == "success"


# -- required-check policy -------------------------------------------------------------------------------

def test_unlabelled_pr_gets_a_neutral_overall_check(fake, publisher):
    fake.add_pull(42, files=("docs/readme.md",))
    post_not_run(publisher, SUITE, 42, sha=HEAD, required_paths=("sglang_omni/models/*asr*",), details_url=None,
                 log=lambda _: None)
    assert checks(fake) == {"ASR gate": "neutral"}


def test_unlabelled_pr_touching_asr_code_needs_action(fake, publisher):
    fake.add_pull(42, files=("sglang_omni/models/qwen3_asr.py",))
    post_not_run(publisher, SUITE, 42, sha=HEAD, required_paths=("sglang_omni/models/*asr*",), details_url=None,
                 log=lambda _: None)
    assert checks(fake) == {"ASR gate": "action_required"}


@pytest.mark.slow  # whole trusted job several times against the GitHub fake
def test_push_after_a_gate_run_leaves_the_new_head_action_required(fake, publisher, trees):
    fake.add_pull(42, labels=("run-whisper-asr",))
    assert post(publisher, "whisper", trees("whisper"))[0]
    fake.push(42, "e" * 40)
    post_not_run(publisher, SUITE, 42, sha="e" * 40, required_paths=(), details_url=None, log=lambda _: None)
    assert checks(fake, "e" * 40) == {"ASR gate": "action_required"}


# -- long strings ----------------------------------------------------------------------------------------

def test_a_100k_character_utterance_id_is_cut_and_the_report_stays_valid(trees):
    import jsonschema

    from gate.formats.report import report_schema

    tree = trees("qwen3")
    shown = judge_uploaded(tree, "qwen3", SUITE, baseline=None, calibration=None).utterances[0]  # one the comment lists
    long_id = "u" * 100_000
    for raw in tree.glob("*/run*/qwen3/raw_*/*.jsonl"):
        text = raw.read_text(encoding="utf-8")
        raw.write_text(text.replace(json.dumps(shown.id), json.dumps(long_id)), encoding="utf-8")
    report = judge_uploaded(tree, "qwen3", SUITE, baseline=None, calibration=None)
    jsonschema.validate(report.to_json(), report_schema())
    long_ones = [u.id for u in report.utterances if u.id.startswith("uuu")]
    assert long_ones and all(i.endswith("…[cut]") for i in long_ones)


# -- hostile strings in every field of every file the trusted job reads ----------------------------------

def _poison(value, counter):
    if isinstance(value, str):
        counter[0] += 1
        return f"{value}{HOSTILE}{counter[0]}"
    if isinstance(value, list):
        return [_poison(v, counter) for v in value]
    if isinstance(value, dict):
        return {k: _poison(v, counter) for k, v in value.items()}
    return value


def poison_tree(root):
    """Hostile text appended to every string of every file, and a hostile line in every text file."""
    counter = [0]
    for path in root.rglob("*"):
        # commit.txt is held to the PR head (check_consistency): a poisoned one is refused, never rendered.
        if not path.is_file() or path.name in ("gate-run.json", "commit.txt"):
            continue
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".json":
            path.write_text(json.dumps(_poison(json.loads(text), counter)), encoding="utf-8")
        elif path.suffix == ".jsonl":
            path.write_text("\n".join(json.dumps(_poison(json.loads(line), counter))
                                      for line in text.splitlines() if line.strip()) + "\n", encoding="utf-8")
        else:
            path.write_text(text.rstrip("\n") + "\n" + HOSTILE.replace("\n", " ") + "\n", encoding="utf-8")


def poison_ids(root):
    """Hostile utterance ids, the same on both sides (still paired, so the changed utterances list them)."""
    for path in root.rglob("*.jsonl"):
        records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        for record in records:
            record["id"] = f"{record['id']} {HOSTILE}"
        path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")


class _Html(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.text, self.comments, self.rows = [], [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "tr":
            self.rows.append(0)
        if tag in ("td", "th") and self.rows:
            self.rows[-1] += 1

    def handle_data(self, data):
        self.text.append(data)

    def handle_comment(self, data):
        self.comments.append(data)


TRUSTED_TAGS = {"details", "summary", "table", "thead", "tbody", "tr", "th", "td", "p", "h2", "h3", "h4", "strong",
                "em", "code", "ul", "ol", "li", "br", "hr", "blockquote", "sub", "sup", "pre", "del"}


@pytest.mark.slow  # whole trusted job per crafted artifact, rendered by cmark-gfm
@pytest.mark.skipif(shutil.which("cmark-gfm") is None, reason="cmark-gfm is not installed (apt-get install cmark-gfm)")
@pytest.mark.parametrize("poison", [poison_tree, poison_ids])
def test_crafted_artifact_comment_rendered_by_cmark_gfm_is_inert(fake, publisher, trees, poison):
    tree = trees("qwen3")
    poison(tree)
    fake.add_pull(42, labels=("run-qwen3-asr",))
    posted, report, _ = post(publisher, "qwen3", tree)
    assert posted
    markdown = sticky(fake)
    assert "&lt;img src" in markdown and "maintainers" in markdown  # hostile strings reached it, escaped
    assert markdown.count("<!-- asr-regression-gate") == 1
    assert "$" not in markdown  # every outside $ is the entity &#36;, never a math delimiter
    # --unsafe keeps raw HTML as HTML, so anything that got through would show up as a tag here.
    rendered = subprocess.run(["cmark-gfm", "--unsafe", "-e", "table", "-e", "autolink", "-e", "strikethrough"],
                              input=markdown, capture_output=True, text=True, check=True).stdout
    page = _Html()
    page.feed(rendered)
    tags = {tag for tag, _ in page.tags}
    assert tags <= TRUSTED_TAGS, f"live HTML from outside: {sorted(tags - TRUSTED_TAGS)}"
    assert not any(tag == "a" for tag, _ in page.tags) and "img" not in tags
    assert [c for c in page.comments if "asr-regression-gate" in c] == [" asr-regression-gate: sticky "]
    text = "".join(page.text)
    assert not re.search(r"@[A-Za-z0-9]", text), "a live @mention"
    assert not re.search(r"(?:#|GH-)\d", text, re.IGNORECASE), "a live issue reference"
    assert not re.search(r"\x1b|\u202e|\u202c", text)
    # Tables of the expected shape: every row has as many cells as its header.
    for table in re.findall(r"<table>.*?</table>", rendered, re.S):
        widths = [len(re.findall(r"<t[hd][ >]", row)) for row in re.findall(r"<tr>.*?</tr>", table, re.S)]
        assert len(set(widths)) == 1, f"a table row with a different width: {widths}"
