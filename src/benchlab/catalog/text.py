"""The canonical text of catalog documents, fast enough for 100,000 entries."""

from __future__ import annotations

import hashlib
from json.encoder import encode_basestring  # type: ignore[attr-defined]
from pathlib import Path
from typing import Any

from benchlab.errors import SchemaError
from benchlab.layout import (
    canonical_json,
)

# --- serialisation ------------------------------------------------------------------------
#
# Every file is `layout.canonical_json` (sorted keys, indent 2, newline). The standard
# library only has a C encoder for compact output; with an indent it falls back to pure
# Python, which takes about 10 s for a 100,000-run catalog. `dumps` below produces the same
# bytes (a property test holds it to that) with string and number leaves done in C, and
# `render_catalog` reuses the text of entries that did not change since the last build.

_RUNS_SENTINEL = "\x00benchlab-runs\x00"
_RUNS_OPEN = '\n  "runs": [\n'
_ITEM_SEPARATOR = ",\n    {\n"


def _float(value: float) -> str:
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    return float.__repr__(value)


def dumps(value: Any, indent: str = "") -> str:
    """`canonical_json(value)` without the trailing newline, at nesting `indent`."""
    if isinstance(value, str):
        return encode_basestring(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return _float(value)
    inner = indent + "  "
    if isinstance(value, dict):
        if not value:
            return "{}"
        if not all(isinstance(k, str) for k in value):
            return canonical_json(value).rstrip("\n").replace("\n", "\n" + indent)
        parts = [
            f"{inner}{encode_basestring(k)}: {dumps(v, inner)}" for k, v in sorted(value.items())
        ]
        return "{\n" + ",\n".join(parts) + "\n" + indent + "}"
    if isinstance(value, (list, tuple)):
        if not value:
            return "[]"
        if all(type(item) is str for item in value):
            body = (",\n" + inner).join(map(encode_basestring, value))
            return "[\n" + inner + body + "\n" + indent + "]"
        return (
            "[\n" + ",\n".join(inner + dumps(item, inner) for item in value) + "\n" + indent + "]"
        )
    raise TypeError(f"cannot serialise {type(value).__name__}")


def render(value: Any) -> str:
    """The canonical text of any document (what `canonical_json` returns, faster)."""
    return dumps(value) + "\n"


def _item_text(entry: dict) -> str:
    return "    " + dumps(entry, "    ")


def reusable_items(text: str, runs: list[dict]) -> dict[str, str]:
    """The text of each entry in a catalog this module wrote, by run id.

    JSON strings hold no raw newline, so a line `    {` (four spaces) can only open an
    entry of the runs list; splitting there is exact. Anything unexpected gives {}.
    """
    start = text.find(_RUNS_OPEN)
    if start < 0 or not runs:
        return {}
    start += len(_RUNS_OPEN)
    end = text.find("\n  ]", start)
    if end < 0:
        return {}
    pieces = text[start:end].split(_ITEM_SEPARATOR)
    if len(pieces) != len(runs) or not pieces[0].startswith("    {\n"):
        return {}
    items = [pieces[0]] + ["    {\n" + piece for piece in pieces[1:]]
    out = {}
    for entry, item in zip(runs, items, strict=True):
        run_id = entry["run_id"]
        if f'"run_id": {encode_basestring(run_id)}' not in item:
            return {}
        out[run_id] = item
    return out


def render_catalog(doc: dict[str, Any], reuse: dict[str, str] | None = None) -> str:
    """The canonical text of a catalog; `reuse` maps run ids to entry text known current."""
    runs = doc.get("runs", [])
    reuse = reuse or {}
    items = [reuse.get(entry["run_id"]) or _item_text(entry) for entry in runs]
    head = dict(doc)
    head["runs"] = _RUNS_SENTINEL
    text = render(head)
    marker = encode_basestring(_RUNS_SENTINEL)
    if text.count(marker) != 1:
        return render(doc)
    runs_text = "[\n" + ",\n".join(items) + "\n  ]" if items else "[]"
    return text.replace(marker, runs_text, 1)


def catalog_text(doc: dict[str, Any]) -> str:
    """The bytes written for a catalog document: exactly `layout.canonical_json(doc)`."""
    return render_catalog(doc)


def _decode(path: Path, raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SchemaError(f"{path}: $: not UTF-8 ({exc.reason} at byte {exc.start})") from None


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
