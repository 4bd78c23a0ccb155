"""The canonical text of the catalog's JSON files (the v3 head, the inventory)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from benchlab.errors import SchemaError
from benchlab.layout import canonical_json

render = canonical_json
"""The canonical text of any document: `layout.canonical_json`, the one writer."""


def _decode(path: Path, raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SchemaError(f"{path}: $: not UTF-8 ({exc.reason} at byte {exc.start})") from None


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
