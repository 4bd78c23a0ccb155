"""Slugs, config hashes, spec ids and run ids (DESIGN.md, "The store").

`spec_id = <machine>-<model>-<precision>-<mode>-<hash8 of the spec>` and
`run_id = <spec_id>-<sweep stamp>`. Ids become directory names, so every id that reaches
the file system passes `check_id` first: nothing can escape the store.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime, timezone
from typing import Any

from benchlab.errors import StoreError

_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,199}$")
_SLUG_DROP = re.compile(r"[^a-z0-9.+]+")
STAMP_FORMAT = "%Y%m%dT%H%M%SZ"


def slug(text: str) -> str:
    """Lower-case, dash-separated: `SmolLM2-135M-Instruct` -> `smollm2-135m-instruct`."""
    cleaned = _SLUG_DROP.sub("-", text.strip().lower()).strip("-.")
    return cleaned or "unnamed"


def check_id(value: str, what: str = "id") -> str:
    """Refuse any id that could escape the store or confuse a terminal; return it unchanged."""
    if not isinstance(value, str) or not _SAFE_ID.match(value) or ".." in value:
        raise StoreError(f"unsafe {what} {value!r}: only letters, digits and . _ + - are allowed")
    return value


def config_hash(obj: Any) -> str:
    """8 hex chars of SHA-256 over the canonical JSON of `obj`: equal configs, equal hash."""
    canonical = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:8]


def spec_id(machine: str, model: str, precision: str, mode: str, spec: Any) -> str:
    parts = [slug(machine), slug(model), slug(precision), slug(mode), config_hash(spec)]
    return check_id("-".join(parts), "spec id")


def run_id(spec: str, stamp: str) -> str:
    return check_id(f"{spec}-{stamp}", "run id")


def sweep_stamp(now: datetime | None = None) -> str:
    """The UTC stamp fixed when a sweep first starts: `20250106T120000Z`."""
    moment = now or datetime.now(timezone.utc)
    return moment.astimezone(timezone.utc).strftime(STAMP_FORMAT)


def utc_iso(now: datetime | None = None) -> str:
    """ISO 8601 UTC with a Z, the timestamp format of every file."""
    moment = now or datetime.now(timezone.utc)
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
