#!/usr/bin/env bash
# Offline lint of the gate's workflows, its composite action and the documented caller workflows.
# Fails on any finding: zizmor (security audits, offline), check-jsonschema against the vendored
# SchemaStore schemas for workflows and actions, and the rule that every job sets timeout-minutes.
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

echo "lint: no findings"
