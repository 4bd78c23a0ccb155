"""Slugs, config hashes, spec ids and run ids (ARCHITECTURE.md, The store).

`spec_id = <machine>-<model>-<precision>-<mode>-<hash of the spec>` (16 hex chars for sweep
points, 8 for imports and older stores) and
`run_id = <spec_id>-<sweep stamp>`. Ids become directory names, so every id that reaches
the file system passes `check_id` first: nothing can escape the store.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from benchlab.errors import StoreError

_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,199}$")
_SLUG_DROP = re.compile(r"[^a-z0-9.+]+")
STAMP_FORMAT = "%Y%m%dT%H%M%SZ"


_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Zl", "Zp"})
"""Control, format (bidi overrides and isolates, zero-width marks), surrogate, private-use and
line/paragraph separators: characters that are invisible or reorder what a reader sees."""


_INVISIBLE_RANGES = (
    (0x034F, 0x034F), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F),
    (0x2800, 0x2800), (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFFA0, 0xFFA0),
    (0xE0100, 0xE01EF),
)  # fmt: skip
INVISIBLE = frozenset(chr(c) for first, last in _INVISIBLE_RANGES for c in range(first, last + 1))
"""Letters and marks that draw nothing (Hangul fillers U+115F, U+1160, U+3164, U+FFA0, the
blank Braille pattern U+2800, the combining grapheme joiner, Khmer and Mongolian invisible
marks, variation selectors): default-ignorable or blank, so `gpu\u3164` reads as `gpu`."""


def hidden_character(text: str) -> str | None:
    """The first character of `text` that a name must not hold, as `U+XXXX`, else None.

    Why: a NUL truncates the name in C tools and file systems; U+202E and its kin make
    `gpu1\u202e2kcab` read as another machine in a terminal, the site and a git diff, so a
    name that looks right could stand for another one.
    """
    for char in text:
        if unicodedata.category(char) in _REFUSED_CATEGORIES or char in INVISIBLE:
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


SPEC_HASH_CHARS = 16
"""Hex chars of a sweep point's spec hash: 64 bits. With 8 (32 bits) two points of one
sweep were likely to share an id past ~100k points; with 16 a 9M-point matrix (3000 x 3000)
collides with odds of about 1 in 450,000, and expand still refuses one that does."""
LEGACY_HASH_CHARS = 8
"""The length every id had before, which imports keep: `check_id` takes any length, so a
store of 8-hex ids loads, and re-importing a file finds the run dir it made before."""


def config_hash(obj: Any, chars: int = LEGACY_HASH_CHARS) -> str:
    """`chars` hex chars of SHA-256 over the canonical JSON of `obj`: equal configs, equal
    hash. A shorter hash is a prefix of a longer one, so an old id can be told from a new."""
    canonical = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:chars]


SETTINGS_CHARS = 16
"""Hex chars of a device's settings digest (64 bits)."""


DEFAULT_PYTHON = "python3"
"""A device's interpreter where its config names none (`models.DeviceConfig.python`): not
hashed, so configs that never set it keep their spec ids."""


def settings_digest(
    env: Mapping[str, str] | None,
    workdir: str | None,
    *,
    command: Sequence[str] | None = None,
    python: str | None = None,
) -> str | None:
    """A digest of how a device runs its points, where the config says: its environment
    (`OMP_NUM_THREADS` shapes the number) and its working dir (which binary and files a
    relative path finds). None where it declares neither, so the spec ids and series of a
    config without them are the ones they always were. Env values may hold secrets: only
    this digest is kept (in the spec id and the identity), never a value; the templates
    are hashed as written, so `${worker_instance_id}` keeps one id across workers. An exec
    device's `command` prefix and a `python` other than the default are hashed too: both
    choose what runs the point (ARCHITECTURE.md, invariant 14)."""
    parts: dict[str, Any] = {}
    if env:
        parts["env"] = {str(k): str(v) for k, v in sorted(env.items())}
    if workdir:
        parts["workdir"] = workdir
    if command:  # an exec device's prefix: which pod, container or allocation runs it
        parts["command"] = [str(part) for part in command]
    if python and python != DEFAULT_PYTHON:  # the interpreter the agent runs under
        parts["python"] = python
    if not parts:
        return None
    return config_hash(parts, SETTINGS_CHARS)


def run_id(spec: str, stamp: str) -> str:
    return check_id(f"{spec}-{stamp}", "run id")


def sweep_stamp(now: datetime | None = None) -> str:
    """The UTC stamp fixed when a sweep first starts: `20250106T120000Z`."""
    moment = now or datetime.now(timezone.utc)
    return moment.astimezone(timezone.utc).strftime(STAMP_FORMAT)


def epoch_of(text: Any) -> float | None:
    """UNIX seconds of an ISO 8601 stamp as the files write them; None for anything else."""
    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def utc_iso(now: datetime | None = None) -> str:
    """ISO 8601 UTC with a Z, the timestamp format of every file."""
    moment = now or datetime.now(timezone.utc)
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
