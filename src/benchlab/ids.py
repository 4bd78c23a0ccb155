"""Slugs, config hashes, spec ids and run ids (DESIGN.md, "The store").

`spec_id = <machine>-<model>-<precision>-<mode>-<hash8 of the spec>` and
`run_id = <spec_id>-<sweep stamp>`. Ids become directory names, so every id that reaches
the file system passes `check_id` first: nothing can escape the store.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from datetime import datetime, timezone
from typing import Any

from benchlab.errors import StoreError

_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,199}$")
_SLUG_DROP = re.compile(r"[^a-z0-9.+]+")
STAMP_FORMAT = "%Y%m%dT%H%M%SZ"


_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Zl", "Zp"})
"""Control, format (bidi overrides and isolates, zero-width marks), surrogate, private-use and
line/paragraph separators: characters that are invisible or reorder what a reader sees."""


def hidden_character(text: str) -> str | None:
    """The first character of `text` that a name must not hold, as `U+XXXX`, else None.

    Why: a NUL truncates the name in C tools and file systems; U+202E and its kin make
    `gpu1\u202e2kcab` read as another machine in a terminal, the site and a git diff, so a
    name that looks right could stand for another one.
    """
    for char in text:
        if unicodedata.category(char) in _REFUSED_CATEGORIES:
            return f"U+{ord(char):04X}"
    return None


def check_name(value: str, what: str = "name") -> str:
    """Refuse a display name (model, machine, backend) holding hidden characters."""
    if not isinstance(value, str):
        raise StoreError(f"{what} must be a string, got {type(value).__name__}")
    bad = hidden_character(value)
    if bad is not None:
        raise StoreError(
            f"{what} {value!a} holds the control or "
            f"bidi character {bad}; only visible characters are allowed"
        )
    return value


def slug(text: str) -> str:
    """Lower-case, dash-separated: `SmolLM2-135M-Instruct` -> `smollm2-135m-instruct`.

    A name with hidden characters is refused rather than cleaned: two names that differ only
    by a bidi override would otherwise share one slug and one series.
    """
    check_name(text)
    cleaned = _SLUG_DROP.sub("-", text.strip().lower()).strip("-.")
    return cleaned or "unnamed"


def check_id(value: str, what: str = "id") -> str:
    """Refuse any id that could escape the store or confuse a terminal; return it unchanged."""
    if not isinstance(value, str) or not _SAFE_ID.fullmatch(value) or ".." in value:
        raise StoreError(f"unsafe {what} {value!a}: only letters, digits and . _ + - are allowed")
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
