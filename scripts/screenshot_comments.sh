#!/usr/bin/env bash
# Screenshots of the PR comment as GitHub shows it: FAIL, WARN, incomplete, not comparable, at 1012 px
# (the width of a comment on a pull request's conversation tab).
# Needs cmark-gfm and chromium (apt-get install -y cmark-gfm chromium) and the gate installed.
# Usage: scripts/screenshot_comments.sh [OUT]   (default docs/images; about a minute on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-docs/images}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python scripts/render_comment_examples.py "$work" || [ $? -eq 1 ]  # exit 1 only if a case changed its verdict
mkdir -p "$out"
for name in fail warn incomplete not-comparable; do
  # GitHub's flavour: tables, strikethrough, autolinks, tag filter; raw HTML (<details>, <sub>) kept, as
  # GitHub keeps those tags. The hidden marker comment renders as nothing, as on GitHub.
  {
    echo '<!doctype html><meta charset="utf-8"><style>'
    cat scripts/github-comment.css
    echo '</style><div class="comment"><div class="header"><b>github-actions</b> <span>bot commented</span></div><div class="markdown-body">'
    cmark-gfm --unsafe --extension table --extension strikethrough --extension autolink --extension tagfilter "$work/$name.md"
    echo '</div></div>'
  } > "$work/$name.html"
  chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --force-device-scale-factor=1 \
    --window-size=1012,2400 --screenshot="$work/$name.png" "file://$work/$name.html" 2>/dev/null
  python scripts/trim_png.py "$work/$name.png" "$out/comment-$name.png"
  echo "$out/comment-$name.png"
done
