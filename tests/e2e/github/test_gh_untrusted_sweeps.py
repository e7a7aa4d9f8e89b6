"""The slow tests of integration/github/test_gh_untrusted.py, kept out of the fast tier (tests/README.md)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.github.test_gh_untrusted import KNOWN_STRICTER, _mutations, _small_report


@pytest.mark.slow  # ~2,000 mutations, each validated by jsonschema
def test_the_strict_reader_refuses_everything_the_shipped_schema_refuses(example_reports):
    import jsonschema

    from gate.formats.report import Report
    from gate.formats.typedjson import SchemaMismatch

    schema = json.loads((Path(__file__).parents[3] / "gate" / "schemas" / "report.schema.json").read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema, format_checker=None)
    doc = _small_report(example_reports)
    assert validator.is_valid(doc) and Report.from_json(doc)
    refused_by_schema = stricter = 0
    for description, mutated in _mutations(doc):
        schema_ok = validator.is_valid(mutated)
        try:
            Report.from_json(mutated)
        except SchemaMismatch as exc:
            if schema_ok:  # the reader may be stricter than the schema, in these known ways only
                stricter += 1
                assert any(kind in str(exc) for kind in KNOWN_STRICTER), (description, str(exc))
        else:
            assert schema_ok, f"{description}: the schema refuses it, the strict reader took it"
        refused_by_schema += not schema_ok
    assert refused_by_schema > 1000 and stricter > 0, (refused_by_schema, stricter)
