"""Regenerate the history screenshots in docs/images/ at 1012 px: the dashboard overview, a model page, one
chart and a PR comment with its nightly trends. Needs headless Chromium and cmark-gfm (Debian packages).

    python scripts/history_screenshots.py [--out docs/images]

Everything is synthetic (`gate history example-nights`, `gate example` trees), so the images are the same
on every machine up to font rendering.
"""
from __future__ import annotations

import argparse
import html
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

WIDTH = 1012
GATE = [sys.executable, "-m", "gate.cli"] if shutil.which("gate") is None else ["gate"]
COMMENT_STYLE = """body { font-family: -apple-system, system-ui, sans-serif; font-size: 14px; color: #1f2328;
 margin: 16px; max-width: 980px; line-height: 1.5; }
table { border-collapse: collapse; display: block; overflow: auto; } th, td { border: 1px solid #d0d7de;
 padding: 6px 13px; } th { background: #f6f8fa; } code { background: #eff1f3; padding: 1px 4px; border-radius: 4px;
 font-size: 90%; } details { margin: 8px 0; }"""


def gate(*args: object) -> str:
    return subprocess.run([*GATE, *map(str, args)], check=True, capture_output=True, text=True).stdout


def shoot(chromium: str, url: str, path: Path, height: int) -> None:
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    f"--screenshot={path}", f"--window-size={WIDTH},{height}", url],
                   check=True, capture_output=True, timeout=120)
    print(f"wrote {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/images"))
    args = parser.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    cmark = shutil.which("cmark-gfm")
    if chromium is None or cmark is None:
        sys.exit("needs chromium and cmark-gfm (apt-get install chromium cmark-gfm)")
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        gate("history", "example-nights", work / "nights", "--nights", 60)
        gate("history", "import", "--history", work / "h", "--runner-class", "h100",
             *sorted((work / "nights").glob("night-*")))
        gate("history", "detect", "--history", work / "h", "--runner-class", "h100", "--recent", 60)
        gate("history", "publish", work / "site", "--history", work / "h", "--repository", "sgl-project/sglang-omni")
        shoot(chromium, (work / "site" / "index.html").as_uri(), args.out / "history-dashboard.png", 620)
        shoot(chromium, (work / "site" / "qwen3.html").as_uri(), args.out / "history-model.png", 1200)
        gate("history", "plot", work / "charts", "--history", work / "h")
        shoot(chromium, (work / "charts" / "qwen3-asr_en-throughput_samples_per_s.svg").as_uri(),
              args.out / "history-chart.png", 280)
        gate("example", work / "pair")
        pair = work / "pair"  # the calibrated baseline file against the candidate with its planted regression
        subprocess.run([*GATE, "compare", pair / "baseline.json", pair / "candidate", "--history", work / "h", "--comment", work / "comment.md",
                        "--format", "none"], capture_output=True, text=True)
        body = subprocess.run([cmark, "-e", "table", "-e", "autolink", "-e", "tagfilter", "--unsafe"],
                              input=(work / "comment.md").read_text(encoding="utf-8"), capture_output=True,
                              text=True, check=True).stdout
        page = work / "comment.html"
        page.write_text(f"<!doctype html><meta charset='utf-8'><title>{html.escape('PR comment')}</title>"
                        f"<style>{COMMENT_STYLE}</style>{body}", encoding="utf-8")
        shoot(chromium, page.as_uri(), args.out / "history-pr-comment.png", 900)


if __name__ == "__main__":
    main()
