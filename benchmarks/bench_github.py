"""Cost of the GitHub side: comment size against the limit, API requests per post, validation time.

Run: python3 benchmarks/bench_github.py
Uses the synthetic example trees (gate.examples) and the loopback fake GitHub from tests/github
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

from gate.commands.post import Plan, check_title, publish  # noqa: E402
from gate.compare import compare  # noqa: E402
from gate.sides import load_side  # noqa: E402
from gate.config import load_suite  # noqa: E402
from gate.examples import write_example_pair  # noqa: E402
from gate.github import Publisher, connect  # noqa: E402
from gate.untrusted import MAX_REPORT_BYTES, UntrustedInputError, load_untrusted_report, render_report  # noqa: E402

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
        path.write_text(json.dumps(report), encoding="utf-8")

        loaded, t_validate = timed(lambda: load_untrusted_report(path))
        rendered, t_render = timed(lambda: render_report(loaded))
        print(f"report: {path.stat().st_size} bytes, {len(report.rows)} rows; validate {t_validate * 1000:.1f} ms, "
              f"render {t_render * 1000:.1f} ms")
        print(f"comment: {len(rendered.comment)} chars / {len(rendered.comment.encode())} bytes (GitHub limit 65536 chars)")

        # Near the size cap: 1300 utterances with 2000-char hostile texts must still fold below the limit.
        worst = json.loads(json.dumps(report))
        template = worst["utterances"][0]
        worst["utterances"] = [dict(template, id=f"u{i}", reference=HOSTILE[:2000], candidate_hypothesis=HOSTILE[:2000],
                                    baseline_hypothesis=HOSTILE[:2000]) for i in range(1300)]
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

        plan = Plan(verdict=report.verdict.value, pr=42, comment=True, sha="a" * 40, labels=("run-asr-all",),
                    check_name="ASR regression gate", check_title=check_title(report), details_url=None,
                    rendered=rendered, tracking_issue=False)
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
                    _, seconds = timed(lambda: publish(publisher, plan))
                    counts.append(len(fake.requests) - before)
                    times.append(seconds)
                label = "PyGithub default throttling" if throttle else "throttling off"
                print(f"3 posts ({label}): requests per post {counts}, seconds {[round(t, 2) for t in times]}, "
                      f"comments on the PR by the bot: {sum(c['user'] == BOT for c in fake.comments_on(42))}")


if __name__ == "__main__":
    main()
