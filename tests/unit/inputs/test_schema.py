"""gate.formats.schema: values are typed and ranged, never coerced."""
from __future__ import annotations

import pytest

from gate.formats import schema

DOC = {"results": [{"evaluated": 10, "wer": {"mean": 0.01}, "flag": True, "neg": -0.0, "text": "5"}]}


def test_get_follows_paths_and_checks():
    assert schema.get(DOC, "results[0].evaluated", schema.COUNT) == 10
    assert schema.get(DOC, "results[0].wer.mean", schema.NON_NEGATIVE) == 0.01
    assert schema.get_optional(DOC, "results[0].absent", schema.COUNT, 7) == 7


@pytest.mark.parametrize("dotted, check, words", [
    ("results[0].flag", schema.COUNT, "results[0].flag is True, expected a non-negative integer"),
    ("results[0].text", schema.NUMBER, "results[0].text is '5', expected a finite number"),
    ("results[0].neg", schema.NON_NEGATIVE, "results[0].neg is -0.0, expected a non-negative number"),
    ("results[0].evaluated", schema.STRING, "results[0].evaluated is 10, expected a string"),
    ("results[1].evaluated", schema.COUNT, "results[1] is missing"),
])
def test_wrong_values_name_the_field(dotted, check, words):
    with pytest.raises(schema.SchemaError) as caught:
        schema.get(DOC, dotted, check)
    assert str(caught.value) == words


def test_optional_and_lists():
    assert schema.optional(schema.POSITIVE)(None, "x") is None
    with pytest.raises(schema.Invalid):
        schema.optional(schema.POSITIVE)(0, "x")
    with pytest.raises(schema.Invalid, match="a list of non-negative integers"):
        schema.list_of(schema.COUNT)([1, True], "x")
    with pytest.raises(schema.Invalid, match="is 2, expected 1"):
        schema.one_of(1)(2, "version")
    with pytest.raises(schema.Invalid):
        schema.one_of(1)(True, "version")  # True == 1 in Python; not here
