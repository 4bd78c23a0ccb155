"""Ids carry no text: the parts of spec and run ids, built from scrubbed slugs of bounded
shape (ARCHITECTURE.md, Publishing and redaction; The store).

A spec id is `<machine>-<model>-<precision>-<mode>-<hash>` and every run id, run dir,
catalog `path`, site file and exporter label repeats it, so what its text parts hold is
published wherever the run is. The `model` field of a catalog entry was scrubbed; the ids
were not. Here every text part goes through one function:

- a model named by its path keeps only its file name's stem (`shapes.model_slug`);
- a path anywhere in the text (an asv parameter holding a home dir) keeps only its last
  component's stem;
- every tell the built-in detectors find in the text (a host in `Darwin <host>.local`, a
  node name) is cut out before the slug is made;
- the slug is at most `PART_LENGTH` characters (the hash after it tells long names apart).

A machine id is a name the user chose, not text to clean: one that holds a tell is refused
(`public_machine_id`), since cutting the host out would file two machines under one id. An
id whose parts still hold a tell after all that is refused with one line.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from benchlab.errors import SchemaError
from benchlab.ids import LEGACY_HASH_CHARS, check_id, config_hash, slug
from benchlab.redact.engine import find
from benchlab.redact.policy import Policy, RedactionConfig, build_policy
from benchlab.redact.shapes import model_slug

_ONE_WORD = re.compile(r"[^\s()=,;]+")
PART_LENGTH = 48
"""Longer than any model or benchmark name people write; the rest is a sentence or a path."""

# A path inside a name: rooted, home-, variable- or dot-relative, or on a drive (not the one
# slash of a Hugging Face `org/name`).
_PATH_RUN = re.compile(
    r"(?<![\w.])(?:[A-Za-z]:[\\/]|~[\w.-]*/|\$\{?\w+\}?[\\/]|\.{1,2}[\\/]|/)[\w.@+%~${}/\\-]*"
)


@functools.cache
def _policy() -> Policy:
    return build_policy(RedactionConfig())


def _tells(text: str) -> list[tuple[int, int, str]]:
    return [(h.start, h.end, h.tell_class) for h in find(_policy(), [text])]


def _cut_tells(text: str) -> str:
    """`text` with every span the built-in detectors find taken out."""
    spans = _tells(text)
    for start, end, _ in sorted(spans, reverse=True):
        text = text[:start] + " " + text[end:]
    return text


def _stem(match: re.Match[str]) -> str:
    return model_slug(match.group(0)) if match.group(0).strip("/\\") else ""


@functools.lru_cache(maxsize=65_536)
def public_id_part(text: str) -> str:
    """The slug `text` stands for in an id: no path, no tell, at most PART_LENGTH chars.

    `/mnt/<volume>/models/X.gguf` gives `x`; `Darwin <host>.local` gives `darwin`;
    `f(path=/home/<user>/data)` gives `f-path-data`; `SmolLM2-135M` gives `smollm2-135m`,
    as `ids.slug` always did."""
    name = text.strip()
    if _ONE_WORD.fullmatch(name) and model_slug(name) != slug(name):
        return _bounded(model_slug(name))  # a model given as a file: its stem
    cleaned = _cut_tells(name)
    cleaned = _PATH_RUN.sub(_stem, cleaned)
    part = _bounded(slug(cleaned))
    if _tells(part):
        classes = ", ".join(sorted({c for _, _, c in _tells(part)}))
        raise SchemaError(
            f"{text[:PART_LENGTH]!r}: its id would publish a tell ({classes}); "
            f"give it a name that says what it is"
        )
    return part


def _bounded(part: str) -> str:
    if len(part) <= PART_LENGTH:
        return part
    return part[:PART_LENGTH].rstrip("-.+") or "unnamed"


def public_machine_id(machine: str, where: str) -> str:
    """`slug(machine)` when it holds no tell; else a one-line `SchemaError` naming `where`
    (the file and field, or the flag, it came from)."""
    part = slug(machine)
    hits = _tells(machine) or _tells(part)
    if hits or len(part) > PART_LENGTH:
        why = ", ".join(sorted({c for _, _, c in hits})) or f"over {PART_LENGTH} characters"
        raise SchemaError(
            f"{where}: machine {machine[:PART_LENGTH]!r} would be a published machine id "
            f"holding a tell ({why}); pass --machine-id with a public name"
        )
    return check_id(part, "machine id")


def public_spec_id(
    machine: str,
    model: str,
    precision: str,
    mode: str,
    spec: Any,
    *,
    hash_chars: int = LEGACY_HASH_CHARS,
) -> str:
    """`<machine>-<model>-<precision>-<mode>-<hash>` from public parts (`public_id_part`);
    the hash covers the spec as given, so two models whose parts agree keep two ids."""
    parts = [
        public_id_part(machine),
        public_id_part(model),
        public_id_part(precision),
        public_id_part(mode),
        config_hash(spec, hash_chars),
    ]
    return check_id("-".join(parts), "spec id")
