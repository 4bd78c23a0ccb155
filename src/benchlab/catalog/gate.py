"""The one gate for catalog data that came from git: every shard line and every v3 head.

Why: a `git pull` brings shards and a catalog.json written by another clone, or by anyone
with push access. Until they pass here they are untrusted bytes: an id of `../../x` becomes
a file name in the site, a NUL or U+202E reaches a terminal, a 30-digit integer or a
shard that is really a FIFO or a link to /dev/zero hangs or exhausts a reader.

What passes: every id matches the pattern its writer uses (`LINE_FIELDS`), every string is
bounded and free of control and bidi characters (`ids.hidden_character`), every number is
within a stated range, and the files are regular files no larger than a cap, opened
without following a link or blocking. One field table is the source of both the fast
checker here and the JSON Schemas in schemas/ (`line_schema`, `head_schema`); a property
test keeps the two in agreement.

Where it runs: when the bytes change, not per query. Readers gate a shard when they
(re)build a cache of it; `bench catalog build` and `validate` gate every shard they read.
A bad line is named (file:line and field) and set aside by readers; the rest still serves.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import orjson

from benchlab import files
from benchlab.catalog.format import (
    ENTRY_FIELDS,
    FAILURE_KINDS,
    GATE_STATUSES,
    HEAD_SCHEMA_ID,
    LINE_SCHEMA_ID,
    MACHINE_FIELDS,
    MARK_FIELDS,
    MARK_REASON_MAX,
    MARK_STATES,
    MARKS,
    POLICY,
    POLICY_PATTERN,
    REQUIRED_FIELDS,
    STATUSES,
    decode_entry,
)
from benchlab.catalog.order import MAX_REJECTED, REJECTED, REJECTED_PATTERN, rejected_problem
from benchlab.errors import SchemaError
from benchlab.metrics import EXTRA_NAME, MAX_DECLARED, MAX_EXTRA_VALUE, MAX_UNIT, REGISTRY

MAX_SHARD_BYTES = 48 * 1024 * 1024
"""A shard is ~7 MB at a million runs of the synthetic fleet; GitHub refuses files over
100 MB. Anything past this is not a shard this project wrote."""
MAX_CATALOG_BYTES = 1024 * 1024 * 1024
"""catalog.json: a v3 head holds machines' static fields and retracted ids (and, after a
merge with a v2 clone, its entries until the next build); a v2 catalog of 100,000 runs is
144 MB. The cap only keeps a reader from reading without end."""
MAX_LINE_BYTES = 256 * 1024
"""One entry is under 2 KB with a batch curve; a line past this is refused unparsed."""
MAX_TEXT = 1024
"""Characters of any string (a run dir path is the longest a writer makes, ~450)."""
MAX_ID = 200
MAX_KEY = 64
MAX_ITEMS = 1024
"""Items of any list (tags, tests, batch sizes, curve points, values under `axes`)."""
MAX_INT = 2**53
"""Integers are kept within +-2**53: exact as float64, which the columnar cache uses."""
MAX_METRIC = 1e12
"""Metrics and their spreads are non-negative rates: nothing measured comes near 1e12."""
WARN_LIMIT = 20
"""Bad lines a reader names on stderr, one line each, before it only counts the rest."""

HIDDEN_RANGES: tuple[tuple[int, int], ...] = (
    (0x0000, 0x001F), (0x007F, 0x009F), (0x00AD, 0x00AD), (0x034F, 0x034F),
    (0x0600, 0x0605), (0x061C, 0x061C), (0x06DD, 0x06DD), (0x070F, 0x070F),
    (0x0890, 0x0891), (0x08E2, 0x08E2), (0x115F, 0x1160), (0x17B4, 0x17B5),
    (0x180B, 0x180F), (0x200B, 0x200F), (0x2028, 0x202E), (0x2060, 0x2064),
    (0x2066, 0x206F), (0x2800, 0x2800), (0x3164, 0x3164), (0xD800, 0xF8FF),
    (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF9, 0xFFFB),
    (0x110BD, 0x110BD), (0x110CD, 0x110CD), (0x13430, 0x1343F), (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A), (0xE0001, 0xE0001), (0xE0020, 0xE007F), (0xE0100, 0xE01EF),
    (0xF0000, 0xFFFFD), (0x100000, 0x10FFFD),
)  # fmt: skip
"""The code points `ids.hidden_character` refuses (categories Cc, Cf, Cs, Co, Zl, Zp, and
the invisible fillers and default-ignorable marks of `ids.INVISIBLE`), as ranges: one regex
finds them in C, and the JSON Schema states the same rule. A test keeps this equal to
`ids.hidden_character` over every code point."""


def _class(ranges: Iterable[tuple[int, int]]) -> str:
    def esc(c: int) -> str:
        return f"\\u{c:04x}" if c <= 0xFFFF else f"\\U{c:08x}"

    return "".join(esc(a) if a == b else f"{esc(a)}-{esc(b)}" for a, b in ranges)


_HIDDEN_CLASS = _class(HIDDEN_RANGES)
_END = r"(?![\s\S])"
"""End of string in both Python's `re` and ECMA 262 (Python's `$` also matches before a
final newline)."""
VISIBLE = f"^[^{_HIDDEN_CLASS}]*{_END}"
ID = rf"^(?!.*\.\.)[A-Za-z0-9][A-Za-z0-9._+-]{{0,{MAX_ID - 1}}}{_END}"
"""Run, machine and spec ids: `ids.check_id`."""
SERIES = rf"^s[0-9a-f]{{12}}{_END}"
"""`identity.series_id`: `s` and 12 hex digits."""
MODEL_ID = rf"^[a-z0-9+][a-z0-9.+-]{{0,{MAX_ID - 1}}}{_END}"
"""`ids.slug` of the model name (lower case; letters, digits, `.`, `+`, `-`)."""
KEY = rf"^[A-Za-z_][A-Za-z0-9_]{{0,{MAX_KEY - 1}}}{_END}"
"""A field name of an entry or a machine (unknown ones are kept: the format is open)."""
HEAD_KEY = rf"^\$?[A-Za-z_][A-Za-z0-9_]{{0,{MAX_KEY - 1}}}{_END}"
STAMP = rf"^[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}}T[0-9]{{2}}:[0-9]{{2}}:[0-9]{{2}}Z{_END}"
"""A mark's `at`: UTC to the second, so the text order is the time order."""

_STAMP_SHAPE = (
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}:[0-9]{2}(?:[.,][0-9]{1,9})?"
    r"(?:Z|[+-][0-9]{2}:?[0-9]{2})?"
)
_STAMP_GOOD = (
    r"(?:19[7-9][0-9]|20[0-9]{2})-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])[T ]"
    r"(?:[01][0-9]|2[0-3]):[0-5][0-9]:(?:[0-5][0-9]|60)(?:[.,][0-9]{1,9})?"
    r"(?:Z|[+-][0-9]{2}:?[0-9]{2})?"
)
TIME = rf"^(?!(?={_STAMP_SHAPE}{_END})(?!{_STAMP_GOOD}{_END}))[^{_HIDDEN_CLASS}]*{_END}"
"""An entry's `timestamp`: a date-time in ISO 8601's shape must be one from 1970 to 2099
with its fields in range (a run stamped in 2200 is refused: no clock wrote it, and the
site's date arithmetic cannot hold it); any other visible text is an undated run, as
before (`format.UNDATED`)."""

_HIDDEN = re.compile(f"[{_HIDDEN_CLASS}]")
_TIME = re.compile(TIME)
_ID = re.compile(ID)
_SERIES = re.compile(SERIES)
_MODEL_ID = re.compile(MODEL_ID)
_KEY = re.compile(KEY)
_HEAD_KEY = re.compile(HEAD_KEY)
_POLICY = re.compile(POLICY_PATTERN)
_STAMP = re.compile(STAMP)


# --- the field table: one source for the checker and the schemas ------------------------


def _kinds() -> dict[str, str]:
    """Each entry field's kind: `format.ENTRY_FIELDS`, with the ids given their patterns."""
    plain = {"str": "text", "str?": "text?", "strs": "texts", "num": "num", "spread": "num"}
    ids = {"run_id": "id", "machine_id": "id", "spec_id": "id?", "timestamp": "time"}
    ids.update(model_id="model_id?", series="series?")
    return {k: ids.get(k) or plain.get(kind, kind) for k, kind in ENTRY_FIELDS.items()}


LINE_FIELDS: dict[str, str] = _kinds()
"""Kinds: id (a run or machine id), id?, series?, model_id?, time (`TIME`), text, text?,
texts, int?, ints?, bool?, num (a metric or spread, or null), obj?, status, failure_kind,
curve."""
REQUIRED = REQUIRED_FIELDS


def _text_schema(
    pattern: str = VISIBLE, limit: int = MAX_TEXT, null: bool = False
) -> dict[str, Any]:
    kind: Any = ["string", "null"] if null else "string"
    return {"type": kind, "maxLength": limit, "pattern": pattern}


def _int_schema(null: bool = False) -> dict[str, Any]:
    kind: Any = ["integer", "null"] if null else "integer"
    return {"type": kind, "minimum": -MAX_INT, "maximum": MAX_INT}


_VALUE_REF = {"$ref": "#/$defs/value"}
_KEY_TEXT = _text_schema(limit=MAX_KEY)


def _value_schema() -> dict[str, Any]:
    """Any JSON value, bounded: what an unknown field (or `axes`) may hold."""
    return {
        "anyOf": [
            {"type": ["null", "boolean"]},
            {"type": "number", "minimum": -MAX_INT, "maximum": MAX_INT},
            _text_schema(),
            {"type": "array", "maxItems": MAX_ITEMS, "items": _VALUE_REF},
            {"type": "object", "propertyNames": _KEY_TEXT, "additionalProperties": _VALUE_REF},
        ]
    }


def _curve_schema() -> dict[str, Any]:
    number = {"type": "number", "minimum": 0, "maximum": MAX_METRIC}
    pair = {"type": "array", "prefixItems": [_int_schema(), number], "minItems": 2, "maxItems": 2}
    point = {
        "type": "object",
        "required": ["batch", "agg_tok_per_sec"],
        "properties": {"batch": _int_schema(), "agg_tok_per_sec": number},
        "propertyNames": _KEY_TEXT,
        "additionalProperties": _VALUE_REF,
    }
    return {"type": ["array", "null"], "maxItems": MAX_ITEMS, "items": {"anyOf": [pair, point]}}


def kind_schema(kind: str) -> dict[str, Any]:
    """The JSON Schema of one field kind (the twin of `CHECKERS[kind]`)."""
    null = kind.endswith("?")
    base = kind.rstrip("?")
    if base in ("id", "series", "model_id"):
        pattern = {"id": ID, "series": SERIES, "model_id": MODEL_ID}[base]
        return _text_schema(pattern, MAX_ID, null)
    if base == "text":
        return _text_schema(null=null)
    if base == "time":
        return _text_schema(TIME)
    if base == "texts":
        return {"type": "array", "maxItems": MAX_ITEMS, "items": _text_schema()}
    if base == "int":
        return _int_schema(null)
    if base == "ints":
        return {"type": ["array", "null"], "maxItems": MAX_ITEMS, "items": _int_schema()}
    if base == "bool":
        return {"type": ["boolean", "null"]}
    if base == "num":
        return {"type": ["number", "null"], "minimum": 0, "maximum": MAX_METRIC}
    if base == "obj":
        return {
            "type": ["object", "null"],
            "propertyNames": _KEY_TEXT,
            "additionalProperties": _VALUE_REF,
        }
    if base == "status":
        return {"enum": list(STATUSES)}
    if base == "failure_kind":
        return {"enum": [*FAILURE_KINDS, None]}
    if base == "curve":
        return _curve_schema()
    if base == "extras":
        return _extras_schema()
    if base == "samples":
        return _samples_schema()
    if base == "verdict":
        return {"enum": [*GATE_STATUSES, None]}
    if base == "mark_state":
        return {"enum": list(MARK_STATES)}
    if base == "stamp":
        return _text_schema(STAMP, 20)
    if base == "reason":
        return _text_schema(limit=MARK_REASON_MAX, null=null)
    raise ValueError(f"unknown field kind {kind!r}")


def _object_schema(fields: dict[str, str], required: Iterable[str], key: str) -> dict[str, Any]:
    return {
        "type": "object",
        "required": list(required),
        "properties": {name: kind_schema(kind) for name, kind in fields.items()},
        "propertyNames": {"pattern": key},
        "additionalProperties": _VALUE_REF,
    }


def _entry_schema() -> dict[str, Any]:
    schema = _object_schema(LINE_FIELDS, REQUIRED, KEY)
    schema["not"] = {"required": ["conflict"]}
    return schema


def _conflict_schema() -> dict[str, Any]:
    """A conflict line. (That every copy carries the line's run id is beyond JSON Schema;
    the checker also asks it.)"""
    copies = {"type": "array", "minItems": 2, "maxItems": MAX_ITEMS, "items": _ENTRY_REF}
    return {
        "type": "object",
        "required": ["run_id", "conflict"],
        "properties": {"run_id": kind_schema("id"), "conflict": copies},
        "additionalProperties": False,
    }


_ENTRY_REF = {"$ref": "#/$defs/entry"}
_LINE = {"anyOf": [_ENTRY_REF, {"$ref": "#/$defs/conflict"}]}


def _line_defs() -> dict[str, Any]:
    return {"value": _value_schema(), "entry": _entry_schema(), "conflict": _conflict_schema()}


def line_schema() -> dict[str, Any]:
    """One shard line (an entry, or a conflict line of entries), as JSON Schema."""
    return {
        "$id": LINE_SCHEMA_ID,
        "title": "One line of a catalog v3 shard",
        **_LINE,
        "$defs": _line_defs(),
    }


def head_schema() -> dict[str, Any]:
    """The v3 catalog.json, as JSON Schema."""
    machine = _object_schema(MACHINE_FIELDS, (), KEY)
    fields = {
        "$schema": {"const": HEAD_SCHEMA_ID},
        "version": _text_schema(),
        "shards": _text_schema(),
        "machines": {
            "type": "object",
            "propertyNames": {"pattern": ID, "maxLength": MAX_ID},
            "additionalProperties": {"$ref": "#/$defs/machine"},
        },
        "retracted": {"type": "array", "items": kind_schema("id")},
        "runs": {"type": "array", "items": _LINE},
        MARKS: {"type": "array", "maxItems": MAX_REJECTED, "items": {"$ref": "#/$defs/mark"}},
        POLICY: {"type": "string", "pattern": POLICY_PATTERN},
        REJECTED: {
            "type": "array",
            "maxItems": MAX_REJECTED,
            "items": {"type": "string", "pattern": REJECTED_PATTERN},
        },
    }
    mark = _object_schema(MARK_FIELDS, ("run_id", "state", "at"), KEY)
    mark["additionalProperties"] = False
    return {
        "$id": HEAD_SCHEMA_ID,
        "title": "catalog.json, v3 (the head: entries live in shards)",
        "type": "object",
        "required": ["$schema"],
        "properties": fields,
        "propertyNames": {"pattern": HEAD_KEY},
        "additionalProperties": _VALUE_REF,
        "$defs": {**_line_defs(), "machine": machine, "mark": mark},
    }


# --- the fast checker ---------------------------------------------------------------------

NULL = object()


def shown_value(value: Any) -> str:
    """A value as a message may show it: ASCII only, short."""
    text = ascii(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _json_type(value: Any) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value)) or ("number" if type(value) in (int, float) else "value")


def hidden_pattern() -> re.Pattern[str]:
    """The compiled class of hidden characters (`HIDDEN_RANGES`), for output that escapes
    them (`query.render`)."""
    return _HIDDEN


def text_problem(
    value: Any, pattern: re.Pattern[str] | None = None, limit: int = MAX_TEXT
) -> str | None:
    if type(value) is not str:
        return f"expected a string, got {_json_type(value)}"
    if len(value) > limit:
        return f"a string of {len(value)} characters (at most {limit})"
    found = _HIDDEN.search(value)
    if found is not None:
        return f"holds the control or bidi character U+{ord(found.group()):04X}"
    if pattern is not None and not pattern.match(value):
        return f"{shown_value(value)} is not a valid id here"
    return None


def _int(value: Any) -> str | None:
    if type(value) is not int:
        return f"expected an integer, got {_json_type(value)}"
    if not -MAX_INT <= value <= MAX_INT:
        return f"{value} is out of range (|n| <= 2**53)"
    return None


def _metric(value: Any) -> str | None:
    if type(value) is not float and type(value) is not int:
        return f"expected a number, got {_json_type(value)}"
    if not 0 <= value <= MAX_METRIC:
        return f"{shown_value(value)} is out of range (0 to {MAX_METRIC:g})"
    return None


def _items(value: Any, check: Callable[[Any], str | None]) -> str | None:
    if type(value) is not list:
        return f"expected an array, got {_json_type(value)}"
    if len(value) > MAX_ITEMS:
        return f"{len(value)} items (at most {MAX_ITEMS})"
    for i, item in enumerate(value):
        problem = check(item)
        if problem is not None:
            return f"[{i}]: {problem}"
    return None


def value_problem(value: Any) -> str | None:
    """Any JSON value, bounded (iterative: a deeply nested value cannot exhaust the stack)."""
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        where, item = stack.pop()
        kind = type(item)
        if item is None or kind is bool:
            continue
        if kind is int or kind is float:
            if not -MAX_INT <= item <= MAX_INT:
                return f"{where}: {shown_value(item)} is out of range (|n| <= 2**53)".lstrip(": ")
        elif kind is str:
            problem = text_problem(item)
            if problem is not None:
                return f"{where}: {problem}".lstrip(": ")
        elif kind is list:
            if len(item) > MAX_ITEMS:
                return f"{where}: {len(item)} items (at most {MAX_ITEMS})".lstrip(": ")
            stack.extend((f"{where}[{i}]", v) for i, v in enumerate(item))
        elif kind is dict:
            for key, v in item.items():
                problem = text_problem(key, limit=MAX_KEY)
                if problem is not None:
                    return f"{where}: key {shown_value(key)}: {problem}".lstrip(": ")
                stack.append((f"{where}.{key}", v))
        else:
            return f"{where}: not a JSON value".lstrip(": ")
    return None


def _curve_point(point: Any) -> str | None:
    if type(point) is list:
        if len(point) != 2:
            return "expected [batch, agg_tok_per_sec]"
        problem = _int(point[0])
        return problem if problem is not None else _metric(point[1])
    if type(point) is not dict:
        return f"expected an array or an object, got {_json_type(point)}"
    for key in ("batch", "agg_tok_per_sec"):
        if key not in point:
            return f"{key}: field required"
    problem = _int(point["batch"]) or _metric(point["agg_tok_per_sec"])
    if problem is not None:
        return problem
    rest = {k: v for k, v in point.items() if k not in ("batch", "agg_tok_per_sec")}
    return _fields_problem(rest, {}) if rest else None


def _time(value: str) -> str | None:
    if _TIME.match(value):
        return None
    return f"{shown_value(value)} is not a date-time from 1970 to 2099"


def _stamp(value: Any) -> str | None:
    problem = text_problem(value, limit=20)
    if problem is None and not _STAMP.match(value):
        return f"{shown_value(value)} is not a UTC time YYYY-MM-DDThh:mm:ssZ"
    return problem


_EXTRA_NAME = re.compile(EXTRA_NAME)
_EXTRA_KEYS = ["better", "unit", "value"]


def _not_extra() -> list[str]:
    """Names a declared metric may not take: an entry field's or a registry metric's."""
    return sorted({*LINE_FIELDS, *REGISTRY})


_NOT_EXTRA = frozenset(_not_extra())


def _extras_schema() -> dict[str, Any]:
    """`extra_metrics` (ARCHITECTURE.md, Metrics): the twin of `_extras`."""
    bound = {"type": "number", "minimum": -MAX_EXTRA_VALUE, "maximum": MAX_EXTRA_VALUE}
    unit = {**_text_schema(limit=MAX_UNIT), "minLength": 1}
    held = {
        "type": "object",
        "required": _EXTRA_KEYS,
        "properties": {"value": bound, "unit": unit, "better": {"enum": ["higher", "lower"]}},
        "additionalProperties": False,
    }
    return {
        "type": ["object", "null"],
        "maxProperties": MAX_DECLARED,
        "propertyNames": {"pattern": EXTRA_NAME, "not": {"enum": _not_extra()}},
        "additionalProperties": held,
    }


def _extras(value: Any) -> str | None:
    """A run's declared metrics: at most MAX_DECLARED names by EXTRA_NAME (none an entry
    field's or a registry metric's), each {value: a finite number within +-1e12, unit: short
    visible text, better: higher|lower} and nothing else."""
    if type(value) is not dict:
        return f"expected an object, got {_json_type(value)}"
    if len(value) > MAX_DECLARED:
        return f"{len(value)} metrics (at most {MAX_DECLARED})"
    for name, held in value.items():
        if type(name) is not str or not _EXTRA_NAME.match(name) or name in _NOT_EXTRA:
            return f"{shown_value(name)}: not a declared metric name"
        if type(held) is not dict or sorted(held) != _EXTRA_KEYS:
            return f"{name}: expected {{value, unit, better}}"
        number = held["value"]
        if type(number) is not float and type(number) is not int:
            return f"{name}.value: expected a number, got {_json_type(number)}"
        if not -MAX_EXTRA_VALUE <= number <= MAX_EXTRA_VALUE:
            return f"{name}.value: {shown_value(number)} is out of range (|n| <= 1e12)"
        problem = text_problem(held["unit"], limit=MAX_UNIT)
        if problem is None and not held["unit"]:
            problem = "empty"
        if problem is not None:
            return f"{name}.unit: {problem}"
        if held["better"] not in ("higher", "lower"):
            return f"{name}.better: expected higher or lower, got {shown_value(held['better'])}"
    return None


extras_problem = _extras
"""What the loader's fast check asks of `extra_metrics` too: one rule, two readers."""

MAX_SAMPLE_N = 1_000_000
"""Repeats one run may state for one metric (`models.MetricSamples`)."""
_SAMPLE_KEYS = ["mean", "n", "sd"]


def _samples_schema() -> dict[str, Any]:
    """`metric_samples` (ARCHITECTURE.md, Compare): the twin of `_samples`."""
    held = {
        "type": "object",
        "required": _SAMPLE_KEYS,
        "properties": {
            "n": {"type": "integer", "minimum": 2, "maximum": MAX_SAMPLE_N},
            "mean": {"type": "number", "minimum": -MAX_EXTRA_VALUE, "maximum": MAX_EXTRA_VALUE},
            "sd": {"type": "number", "minimum": 0, "maximum": MAX_METRIC},
        },
        "additionalProperties": False,
    }
    return {
        "type": ["object", "null"],
        "maxProperties": MAX_DECLARED + len(REGISTRY),
        "propertyNames": {"pattern": EXTRA_NAME},
        "additionalProperties": held,
    }


def _samples(value: Any) -> str | None:
    """A run's samples per metric: at most one per registry or declared metric, names by
    EXTRA_NAME, each {n: an integer 2 to 1e6, mean: within +-1e12, sd: 0 to 1e12}."""
    if type(value) is not dict:
        return f"expected an object, got {_json_type(value)}"
    if len(value) > MAX_DECLARED + len(REGISTRY):
        return f"{len(value)} metrics (at most {MAX_DECLARED + len(REGISTRY)})"
    for name, held in value.items():
        if type(name) is not str or not _EXTRA_NAME.match(name):
            return f"{shown_value(name)}: not a metric name"
        if type(held) is not dict or sorted(held) != _SAMPLE_KEYS:
            return f"{name}: expected {{n, mean, sd}}"
        n, centre, sd = held["n"], held["mean"], held["sd"]
        if type(n) is not int or not 2 <= n <= MAX_SAMPLE_N:
            return f"{name}.n: expected an integer from 2 to {MAX_SAMPLE_N}, got {shown_value(n)}"
        if type(centre) not in (int, float) or not -MAX_EXTRA_VALUE <= centre <= MAX_EXTRA_VALUE:
            return f"{name}.mean: expected a number within +-1e12, got {shown_value(centre)}"
        if type(sd) not in (int, float) or not 0 <= sd <= MAX_METRIC:
            return f"{name}.sd: expected a number from 0 to 1e12, got {shown_value(sd)}"
    return None


samples_problem = _samples
"""What the loader's fast check asks of `metric_samples` too: one rule, two readers."""


def _nullable(check: Callable[[Any], str | None]) -> Callable[[Any], str | None]:
    return lambda value: None if value is None else check(value)


CHECKERS: dict[str, Callable[[Any], str | None]] = {
    "id": lambda v: text_problem(v, _ID, MAX_ID),
    "series": lambda v: text_problem(v, _SERIES, MAX_ID),
    "model_id": lambda v: text_problem(v, _MODEL_ID, MAX_ID),
    "text": text_problem,
    "texts": lambda v: _items(v, text_problem),
    "int": _int,
    "ints": lambda v: _items(v, _int),
    "bool": lambda v: None if type(v) is bool else f"expected a boolean, got {_json_type(v)}",
    "num": _metric,
    "obj": lambda v: (
        value_problem(v) if type(v) is dict else f"expected an object, got {_json_type(v)}"
    ),
    "status": lambda v: (
        None if v in STATUSES else f"expected 'ok' or 'failed', got {shown_value(v)}"
    ),
    "failure_kind": lambda v: (
        None
        if v is None or v in FAILURE_KINDS
        else f"expected one of {', '.join(FAILURE_KINDS)} or null, got {shown_value(v)}"
    ),
    "curve": _nullable(lambda v: _items(v, _curve_point)),
    "extras": _nullable(lambda v: _extras(v)),
    "samples": _nullable(lambda v: _samples(v)),
    "verdict": lambda v: (
        None
        if v is None or v in GATE_STATUSES
        else f"expected one of {', '.join(GATE_STATUSES)} or null, got {shown_value(v)}"
    ),
    "mark_state": lambda v: (
        None
        if v in MARK_STATES
        else f"expected one of {', '.join(MARK_STATES)}, got {shown_value(v)}"
    ),
    "stamp": _stamp,
    "time": lambda v: text_problem(v) or _time(v),
    "reason?": _nullable(lambda v: text_problem(v, limit=MARK_REASON_MAX)),
}
for _kind in ("id", "series", "model_id", "text", "int", "ints", "bool", "num", "obj"):
    CHECKERS[f"{_kind}?"] = _nullable(CHECKERS[_kind])
CHECKERS["num"] = CHECKERS["num?"]  # a metric may be null


def _compiled(fields: dict[str, str]) -> dict[str, Callable[[Any], str | None]]:
    return {name: CHECKERS[kind] for name, kind in fields.items()}


_LINE_CHECKS = _compiled(LINE_FIELDS)
_MACHINE_CHECKS = _compiled(MACHINE_FIELDS)
_MARK_CHECKS = _compiled(MARK_FIELDS)


def _fields_problem(
    data: dict[str, Any],
    checks: dict[str, Callable[[Any], str | None]],
    key: re.Pattern[str] = _KEY,
) -> str | None:
    for name, value in data.items():
        check = checks.get(name)
        if check is None:
            if type(name) is not str or not key.match(name):
                return f"{shown_value(name)}: not a field name"
            problem = value_problem(value)
        else:
            problem = check(value)
        if problem is not None:
            return f"{name}: {problem}" if not problem.startswith("[") else f"{name}{problem}"
    return None


_TEXT, _INT, _NUM, _TEXTS, _ID_CODE, _OTHER = range(6)
_PLAIN_CODES: dict[str, tuple[int, re.Pattern[str] | None]] = {}
for _name, _kind in LINE_FIELDS.items():
    _base = _kind.rstrip("?")
    _PLAIN_CODES[_name] = {
        "text": (_TEXT, None),
        "int": (_INT, None),
        "num": (_NUM, None),
        "texts": (_TEXTS, None),
        "id": (_ID_CODE, _ID),
        "series": (_ID_CODE, _SERIES),
        "model_id": (_ID_CODE, _MODEL_ID),
        "time": (_ID_CODE, _TIME),
    }.get(_base, (_OTHER, None))
_KINDS_OR_NULL = (*FAILURE_KINDS, None)


def is_plain(line: bytes) -> bool:
    """A line of at most MAX_TEXT bytes, ASCII, with no backslash and no DEL (JSON forbids
    raw control bytes in strings) has no string that is too long or holds a hidden
    character: per-string scans can be skipped."""
    return len(line) <= MAX_TEXT and line.isascii() and b"\\" not in line and b"\x7f" not in line


def _plain_ok(e: dict[str, Any]) -> bool:
    """True only if `line_problem(e)` is None, for an entry parsed from a plain line: the
    common case in one pass over the fields present (this runs once per line whenever a
    shard changes). False means "ask `line_problem`", which names the fault or passes."""
    for key in REQUIRED:
        if type(e.get(key)) is not str:
            return False
    codes = _PLAIN_CODES
    for key, value in e.items():
        found = codes.get(key)
        if found is None:
            return False  # an unknown field: the slow path checks it
        if value is None:
            continue
        code, pattern = found
        kind = type(value)
        if code == _TEXT:
            if kind is not str:
                return False
        elif code == _NUM:
            if (kind is not float and kind is not int) or not 0 <= value <= MAX_METRIC:
                return False
        elif code == _INT:
            if kind is not int or not -MAX_INT <= value <= MAX_INT:
                return False
        elif code == _ID_CODE:
            if kind is not str or not pattern.match(value):  # type: ignore[union-attr]
                return False
        elif code == _TEXTS:
            if kind is not list or any(type(i) is not str for i in value):
                return False
        elif not _plain_other(key, value):
            return False
    return True


def _plain_other(key: str, value: Any) -> bool:
    if key == "batch_curve":
        return _plain_curve(value)
    if key == "metric_samples":
        return _samples(value) is None
    if key == "batch_sizes":
        return _plain_ints(value)
    if key == "flash_attn":
        return type(value) is bool
    if key == "failure_kind":
        return value in _KINDS_OR_NULL
    if key == "gate":
        return value in GATE_STATUSES
    return key == "status" and value in STATUSES  # axes: the slow path


def _plain_ints(items: Any) -> bool:
    return (
        type(items) is list
        and len(items) <= MAX_ITEMS
        and all(type(i) is int and -MAX_INT <= i <= MAX_INT for i in items)
    )


def _plain_curve(curve: Any) -> bool:
    return (
        type(curve) is list
        and len(curve) <= MAX_ITEMS
        and all(
            type(p) is list
            and len(p) == 2
            and type(p[0]) is int
            and -MAX_INT <= p[0] <= MAX_INT
            and (type(p[1]) is float or type(p[1]) is int)
            and 0 <= p[1] <= MAX_METRIC
            for p in curve
        )
    )


CONFLICT = "conflict"
"""A conflict line (`order.settle`): `{"run_id": ..., "conflict": [copy, copy, ...]}`, two
or more copies of one run that measure differently, each an entry."""


def line_problem(entry: Any) -> str | None:
    """What is wrong with one line (an entry, the curve in either form, or a conflict line
    of entries), as `field: reason`; None when it passes."""
    if type(entry) is dict and CONFLICT in entry:
        return _conflict_problem(entry)
    return entry_problem(entry)


def _conflict_problem(line: dict[str, Any]) -> str | None:
    extra = sorted(k for k in line if k not in ("run_id", CONFLICT))
    if extra:
        return f"{shown_value(extra[0])}: not a field of a conflict line"
    if "run_id" not in line:
        return "run_id: field required"
    problem = CHECKERS["id"](line["run_id"])
    if problem is not None:
        return f"run_id: {problem}"
    held = line[CONFLICT]
    if type(held) is not list or not 2 <= len(held) <= MAX_ITEMS:
        return f"{CONFLICT}: expected an array of 2 to {MAX_ITEMS} copies of the run"
    for i, copy in enumerate(held):
        problem = entry_problem(copy)
        if problem is None and copy.get("run_id") != line["run_id"]:
            problem = "run_id: not the run id of the line"
        if problem is not None:
            return f"{CONFLICT}[{i}].{problem}"
    return None


def entry_problem(entry: Any) -> str | None:
    """What is wrong with one entry, as `field: reason`; None when it passes."""
    if type(entry) is not dict:
        return f"$: expected an entry object, got {_json_type(entry)}"
    if CONFLICT in entry:
        return f"{CONFLICT}: a copy cannot hold copies"
    for name in REQUIRED:
        if name not in entry:
            return f"{name}: field required"
    return _fields_problem(entry, _LINE_CHECKS)


def check_line(where: str, entry: Any) -> None:
    """Refuse one entry from outside this clone (a pulled shard line, an import) with one
    SchemaError naming `where` and the field."""
    problem = line_problem(entry)
    if problem is not None:
        raise SchemaError(f"{where}: {problem}")


def head_problem(doc: Any) -> str | None:
    """What is wrong with a v3 catalog.json, as `$.field: reason`; None when it passes."""
    if type(doc) is not dict:
        return f"$: expected an object, got {_json_type(doc)}"
    if doc.get("$schema", NULL) != HEAD_SCHEMA_ID:
        return f"$.$schema: expected {HEAD_SCHEMA_ID!r}, got {shown_value(doc.get('$schema'))}"
    for name, value in doc.items():
        problem = head_field(name, value)
        if problem is not None:
            sep = "" if problem.startswith(("[", ".")) else ": "
            return f"$.{name}{sep}{problem}" if type(name) is str else f"$: {problem}"
    return None


def head_field(name: Any, value: Any) -> str | None:
    if name == "$schema":
        return None
    if name in ("version", "shards"):
        return text_problem(value)
    if name == "retracted":
        return _items_any(value, CHECKERS["id"])
    if name == "runs":
        return _items_any(value, line_problem)
    if name == MARKS:
        return _items_any(value, mark_problem, MAX_REJECTED)
    if name == POLICY:
        ok = type(value) is str and _POLICY.match(value)
        return (
            None if ok else f"expected a policy version (16 hex digits), got {shown_value(value)}"
        )
    if name == REJECTED:
        return _items_any(value, rejected_problem, MAX_REJECTED)
    if name == "machines":
        if type(value) is not dict:
            return f"expected an object, got {_json_type(value)}"
        for machine, summary in value.items():
            problem = text_problem(machine, _ID, MAX_ID)
            if problem is None and type(summary) is not dict:
                problem = f"expected an object, got {_json_type(summary)}"
            if problem is None:
                problem = _fields_problem(summary, _MACHINE_CHECKS)
            if problem is not None:
                return (
                    f".{shown_value(machine) if type(machine) is not str else machine}: {problem}"
                )
        return None
    if type(name) is not str or not _HEAD_KEY.match(name):
        return f"{shown_value(name)}: not a field name"
    return value_problem(value)


def mark_problem(mark: Any) -> str | None:
    """What is wrong with one outlier mark of a head (`format.MARK_FIELDS`): its run id by
    the id pattern, its state, its UTC time, its reason bounded and visible; no other key."""
    if type(mark) is not dict:
        return f"expected a mark object, got {_json_type(mark)}"
    for name in ("run_id", "state", "at"):
        if name not in mark:
            return f".{name}: field required"
    for name, value in mark.items():
        check = _MARK_CHECKS.get(name)
        if check is None:
            return f".{shown_value(name)}: not a field of a mark"
        problem = check(value)
        if problem is not None:
            return f".{name}: {problem}"
    return None


def _items_any(
    value: Any, check: Callable[[Any], str | None], limit: int | None = None
) -> str | None:
    """A list (of any length where `limit` is None: the head's retracted ids and pending
    runs), its length checked before any item is."""
    if type(value) is not list:
        return f"expected an array, got {_json_type(value)}"
    if limit is not None and len(value) > limit:
        return f"{len(value)} items (at most {limit})"
    for i, item in enumerate(value):
        problem = check(item)
        if problem is not None:
            return f"[{i}]{problem}" if problem.startswith(".") else f"[{i}]: {problem}"
    return None


REBUILDS_HEAD = "`bench catalog build` writes the head again without it"
"""The fix a reader names for a head field the gate refuses (`catalog.salvage`)."""


def check_head(where: Path | str, doc: Any) -> None:
    """Refuse a v3 catalog.json with one SchemaError naming the file and the field, and,
    where only a field (or an item of one) is refused, the build that writes it again."""
    problem = head_problem(doc)
    if problem is not None:
        whole = problem.startswith(("$:", "$.$schema"))  # no v3 head: nothing to salvage
        fix = "" if whole else f"; {REBUILDS_HEAD}"
        raise SchemaError(f"{where}: {problem}{fix}")


# --- lines of a shard ---------------------------------------------------------------------


def gate_lines(raw: bytes, where: str) -> tuple[list[dict[str, Any]], list[int], list[str]]:
    """(entries that pass, their byte offsets, problems) of one shard's bytes: a bad line is
    named (`where:LINE: field: reason`) and set aside; the other lines still serve. Entries
    come back decoded (`shards.decode_entry`); a run id twice in one shard is set aside
    the second time."""
    out: list[dict[str, Any]] = []
    offsets: list[int] = []
    problems: list[str] = []
    seen: dict[str, int] = {}
    loads = orjson.loads
    position = 0
    for number, line in enumerate(raw.split(b"\n"), start=1):
        start, position = position, position + len(line) + 1
        if not line.strip():
            continue
        data, problem = parse_line(line, loads)
        if problem is None and data["run_id"] in seen:
            run_id = data["run_id"]
            problem = f"run_id: duplicate id {run_id!a} (also at line {seen[run_id]})"
        if problem is not None:
            problems.append(f"{where}:{number}: {problem}")
            continue
        seen[data["run_id"]] = number
        out.append(decode_entry(data))
        offsets.append(start)
    return out, offsets, problems


def parse_line(line: bytes, loads: Callable[[bytes], Any] = orjson.loads) -> tuple[Any, str | None]:
    """(parsed, problem) of one line's bytes, as every reader's gate judges it: what
    `gate_lines` asks of each line, and what a writer asks of a line before it writes it
    (`catalog.contract`, ARCHITECTURE.md invariant 11)."""
    if len(line) > MAX_LINE_BYTES:
        return None, f"a line of {len(line)} bytes (at most {MAX_LINE_BYTES})"
    try:
        data = loads(line)
    except orjson.JSONDecodeError as exc:
        return None, f"not JSON: {exc.msg}"
    if type(data) is dict and is_plain(line) and _plain_ok(data):
        return data, None
    return data, line_problem(data)


def warn(problems: list[str], stream: Any = None) -> None:
    """One stderr line per set-aside line or file, the first WARN_LIMIT of them."""
    out = stream if stream is not None else sys.stderr
    for problem in problems[:WARN_LIMIT]:
        print(f"bench: warning: set aside: {problem}", file=out)
    if len(problems) > WARN_LIMIT:
        print(f"bench: warning: ... and {len(problems) - WARN_LIMIT} more set aside", file=out)


# --- files --------------------------------------------------------------------------------


def read_regular(path: Path | str, name: str, cap: int) -> tuple[bytes, os.stat_result]:
    """(bytes, stat) of a store file that must be a regular file, read by the one guarded
    reader (`benchlab.files`: no link followed, no FIFO waited on, at most `cap` bytes).
    Anything else is one StoreError naming the file."""
    return files.read_with_stat(path, cap=cap, name=name)


def read_catalog(path: Path) -> bytes | None:
    """catalog.json's bytes, None when there is none: a link, FIFO or device there is one
    StoreError, never followed or waited on."""
    if not os.path.lexists(path):
        return None
    return read_regular(path, str(path), MAX_CATALOG_BYTES)[0]


def check_regular(path: Path | str, name: str) -> None:
    """Refuse (one StoreError) a store file that is no regular file, without reading it:
    before a reader that would follow a link or block on a FIFO opens it."""
    files.check_regular(path, name=name)
