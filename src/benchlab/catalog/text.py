"""The canonical text of catalog documents, fast enough for 100,000 entries."""

from __future__ import annotations

import hashlib
from json.encoder import encode_basestring
from pathlib import Path
from typing import Any

from benchlab.errors import SchemaError
from benchlab.layout import canonical_json, dumps

# --- serialisation ------------------------------------------------------------------------
#
# Every file is `layout.canonical_json` (sorted keys, indent 2, newline), the one writer;
# `render_catalog` reuses the text of entries that did not change since the last write.

_RUNS_SENTINEL = "\x00benchlab-runs\x00"
_RUNS_OPEN = '\n  "runs": [\n'
_ITEM_SEPARATOR = ",\n    {\n"


render = canonical_json
"""The canonical text of any document: `layout.canonical_json`, the one writer."""


def _item_text(entry: dict[str, Any]) -> str:
    return "    " + dumps(entry, "    ")


def reusable_items(text: str, runs: list[dict[str, Any]]) -> dict[str, str]:
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
