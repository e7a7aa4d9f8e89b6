"""Cost of the GitHub side: comment size against the limit, trusted judging time, API requests per post.

Run: python3 benchmarks/bench_github.py
Uses the synthetic example trees (gate.examples) and the loopback fake GitHub from tests/helpers/fake_github.py
(a test double speaking GitHub's REST shapes); nothing leaves 127.0.0.1.
"""
from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "github"))

from fake_github import BOT, REPO, TOKEN, FakeGitHub  # noqa: E402

from gate.commands.action import render_report  # noqa: E402
from gate.examples import write_example_pair  # noqa: E402
from gate.formats import runlog  # noqa: E402
from gate.formats.config import load_suite  # noqa: E402
from gate.judging.compare import compare  # noqa: E402
from gate.publish.github import Publisher, connect  # noqa: E402
from gate.publish.posting import judge_uploaded, post_model, render_section  # noqa: E402
from gate.publish.untrusted import MAX_REPORT_BYTES, UntrustedInputError, expected_run_dirs, load_untrusted_report  # noqa: E402
from gate.reading.side_loader import load_side  # noqa: E402

HOSTILE = "</details><script>x</script> @everyone ``` | " * 40


def timed(fn):
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def main() -> None:
    suite = load_suite()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        baseline, candidate = write_example_pair(root / "trees", suite)
        report = compare(load_side(baseline, suite, None), load_side(candidate, suite, None), suite)
        path = root / "report.json"
        path.write_text(json.dumps(report.to_json()), encoding="utf-8")

        loaded, t_validate = timed(lambda: load_untrusted_report(path))
        rendered, t_render = timed(lambda: render_report(loaded))
        print(f"report: {path.stat().st_size} bytes, {len(report.rows)} rows; validate {t_validate * 1000:.1f} ms, "
              f"render {t_render * 1000:.1f} ms")
        print(f"comment: {len(rendered.comment)} chars / {len(rendered.comment.encode())} bytes (GitHub limit 65536 chars)")

        # At the schema's caps: 500 utterances with 600-char hostile texts must still fold below the limit.
        worst = json.loads(json.dumps(report.to_json()))
        template = worst["utterances"][0]
        worst["utterances"] = [dict(template, id=f"u{i}", reference=HOSTILE[:600], candidate_hypothesis=HOSTILE[:600],
                                    baseline_hypothesis=HOSTILE[:600]) for i in range(500)]
        worst_path = root / "worst.json"
        worst_path.write_text(json.dumps(worst), encoding="utf-8")
        worst_loaded, t_worst_validate = timed(lambda: load_untrusted_report(worst_path))
        worst_rendered, t_worst = timed(lambda: render_report(worst_loaded))
        print(f"worst-case report: {worst_path.stat().st_size} bytes; validate {t_worst_validate * 1000:.0f} ms, "
              f"render {t_worst * 1000:.0f} ms, comment {len(worst_rendered.comment.encode())} bytes")

        oversize = root / "oversize.json"
        oversize.write_bytes(b" " * (MAX_REPORT_BYTES + 1))
        try:
            _, t_refuse = timed(lambda: load_untrusted_report(oversize))
        except UntrustedInputError:
            start = time.perf_counter()
            try:
                load_untrusted_report(oversize)
            except UntrustedInputError:
                t_refuse = time.perf_counter() - start
        print(f"oversize ({MAX_REPORT_BYTES + 1} bytes) refused in {t_refuse * 1000:.2f} ms (size checked before reading)")

        # The trusted report job: judge one model's uploaded trees, then publish (check, comment, overall check).
        trees = root / "upload"
        for side, source in (("base", baseline), ("candidate", candidate)):
            (trees / side).mkdir(parents=True)
            for run_dir in source.iterdir():
                if run_dir.is_dir():
                    run_dir.rename(trees / side / run_dir.name)
            runs = {f"{side}/{name}": "completed" for name in expected_run_dirs(suite)}
            log = runlog.skeleton({"base": "/checkouts/base", "candidate": "/checkouts/pr"}, runs,
                                  started="2026-11-02T03:00:00+00:00", status="completed")
            (trees / side / runlog.FILE).write_text(json.dumps(log))
        judged, t_judge = timed(lambda: judge_uploaded(trees, "qwen3", suite, baseline=None, calibration=None))
        section = render_section(judged)
        print(f"trusted judge of qwen3 (tree checks + compare): {t_judge:.2f} s, verdict {judged.verdict.value}")
        for throttle in (False, True):
            with FakeGitHub() as fake:
                fake.add_pull(42, labels=("run-asr-all",))
                for _ in range(20):
                    fake.add_comment(42, "review chatter", user="someone")
                publisher = Publisher(connect(api_url=fake.base_url, token=TOKEN, retry=None, throttle=throttle),
                                      REPO, bot_login=BOT)
                counts, times = [], []
                for _ in range(3):
                    before = len(fake.requests)
                    _, seconds = timed(lambda: post_model(publisher, suite, 42, sha="a" * 40, model="qwen3",  # noqa: B023  # called before the loop moves on
                                                          report=judged, section=section, details_url=None,
                                                          log=lambda _: None))
                    counts.append(len(fake.requests) - before)
                    times.append(seconds)
                label = "PyGithub default throttling" if throttle else "throttling off"
                print(f"3 posts ({label}): requests per post {counts}, seconds {[round(t, 2) for t in times]}, "
                      f"comments on the PR by the bot: {sum(c['user'] == BOT for c in fake.comments_on(42))}")

if __name__ == "__main__":
    main()
