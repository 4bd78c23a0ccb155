"""JSON text for the site's data files: orjson, written as ASCII as `json.dumps` writes it.

A 10,000-run site writes some 25 MB of chart, series, run and compare data; the standard
library's encoder took a tenth of the render. orjson is several times faster and already a
dependency (the catalog's shards). Its text is ASCII here as the standard encoder's is
(`ensure_ascii`): a data file means the same bytes whatever the page's charset. A value
orjson does not take (an integer past 64 bits) goes through `json.dumps` instead.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # a UTF-16 surrogate pair, as JSON spells a character past the BMP
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def dumps(value: Any, *, sort_keys: bool = False) -> str:
    """Compact JSON (no spaces), ASCII only, keys sorted where asked."""
    try:
        text = orjson.dumps(value, option=_OPTIONS | (orjson.OPT_SORT_KEYS if sort_keys else 0))
    except TypeError:
        return json.dumps(value, sort_keys=sort_keys, separators=(",", ":"), ensure_ascii=True)
    decoded = text.decode("utf-8")
    return decoded if decoded.isascii() else _NON_ASCII.sub(_escape, decoded)
