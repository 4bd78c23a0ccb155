"""The site's data files are written by orjson as ASCII JSON (publish/jsontext.py): the same
values as the standard encoder's text, every character past ASCII escaped as it escapes it."""

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
def test_the_text_is_ascii_and_reads_back_as_the_standard_encoders(value: object) -> None:
    text = dumps(value, sort_keys=True)
    assert text.isascii()
    assert json.loads(text) == json.loads(json.dumps(value, sort_keys=True))


def test_characters_past_ascii_are_escaped_as_the_standard_encoder_escapes_them() -> None:
    value = {"model": "Llama-é \u2028 😀 </script>"}
    assert dumps(value) == json.dumps(value, separators=(",", ":"), ensure_ascii=True)


def test_what_orjson_does_not_take_is_written_by_the_standard_encoder() -> None:
    expected = '{"big":1180591620717411303424,"keys":{"1":"a"}}'
    assert dumps({"big": 2**70, "keys": {1: "a"}}) == expected
