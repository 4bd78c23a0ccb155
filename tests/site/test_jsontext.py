"""The site's data files are written by orjson (publish/jsontext.py): the same values as the
standard encoder's text, and what orjson does not take still written."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from benchlab.publish.jsontext import dumps

VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(value=VALUES)
def test_the_text_reads_back_as_the_standard_encoders(value: object) -> None:
    assert json.loads(dumps(value, sort_keys=True)) == json.loads(json.dumps(value))


def test_keys_are_sorted_where_asked_and_the_text_is_compact() -> None:
    assert dumps({"b": 1, "a": "é · 😀"}, sort_keys=True) == '{"a":"é · 😀","b":1}'


def test_what_orjson_does_not_take_is_written_by_the_standard_encoder() -> None:
    expected = '{"big":1180591620717411303424,"keys":{"1":"a"}}'
    assert dumps({"big": 2**70, "keys": {1: "a"}}) == expected
