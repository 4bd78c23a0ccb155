"""JSON text for the site's data files, by orjson.

A 10,000-run site writes some 25 MB of chart, series, run and compare data; the standard
library's encoder took a tenth of the render. orjson is several times faster and already a
dependency (the catalog's shards). Its text is UTF-8, like every page of the site and every
chart file, which all say `<meta charset="utf-8">`. A value orjson does not take (an
integer past 64 bits) goes through `json.dumps` instead.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY


def dumps(value: Any, *, sort_keys: bool = False) -> str:
    """Compact JSON (no spaces), keys sorted where asked."""
    try:
        text = orjson.dumps(value, option=_OPTIONS | (orjson.OPT_SORT_KEYS if sort_keys else 0))
    except TypeError:
        return json.dumps(value, sort_keys=sort_keys, separators=(",", ":"), ensure_ascii=False)
    return text.decode("utf-8")
