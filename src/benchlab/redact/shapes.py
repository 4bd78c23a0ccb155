"""The structural defence: public id fields only ever hold values of a known, safe shape.

The scanner finds tells it has a detector for; it cannot find a user name it has never
seen. The fields that become public ids (machine, model, precision, backend, mode, tags)
are short names with a known shape, so instead of hunting for what is wrong in them, the
catalog checks that they are right: a letter-and-digit slug, no path, no `@`, no address,
and no tell of any class. A value that fails is refused before it is written, with the
field named, rather than redacted into a placeholder nobody can query.

    model_slug(name)                       the public slug of a model name or model path
    check_public_field(field, value)       refuse a value that is not a safe public id
    refuse_hostname_as_id(machine_id, ...) refuse a machine id that is the host's own name
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Iterable

from benchlab.errors import ConfigError, SchemaError
from benchlab.ids import slug
from benchlab.redact.engine import find
from benchlab.redact.policy import Policy, RedactionConfig, build_policy

__all__ = [
    "MAX_LENGTH",
    "PUBLIC_ID_FIELDS",
    "check_public_field",
    "model_slug",
    "refuse_hostname_as_id",
]

MAX_LENGTH = 64
"""Longer than any real model or machine name; a longer value is a path or a sentence."""

# Tags also carry benchlab's own `failover-from:<device>` and `hole` markers, hence `:`.
_ID_SHAPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")
_TAG_SHAPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+:=-]*")
PUBLIC_ID_FIELDS: dict[str, re.Pattern[str]] = {
    "machine_id": _ID_SHAPE,
    "model_id": _ID_SHAPE,
    "precision": _ID_SHAPE,
    "backend": _ID_SHAPE,
    "mode": _ID_SHAPE,
    "tags": _TAG_SHAPE,
}

# Model weights files: the extension is the format, not the model's name.
_MODEL_SUFFIXES = (
    ".gguf",
    ".ggml",
    ".bin",
    ".safetensors",
    ".pt",
    ".pth",
    ".ckpt",
    ".onnx",
    ".tflite",
    ".mlmodel",
    ".mlpackage",
    ".llamafile",
    ".pte",
)
_DRIVE = re.compile(r"[A-Za-z]:[\\/]")
# `%40` or `%2F` in a model name means it was a URL or a path before it was escaped.
_ESCAPED_SEPARATOR = re.compile(r"%(?:2[Ff]|5[Cc]|40)")


def _is_path(name: str) -> bool:
    """A model given as a file rather than a name: absolute, home-relative, or a weights file.

    `org/name` (a Hugging Face repo id) is a name: one slash, no extension, relative.
    """
    if name.startswith(("/", "~", "\\", "./", "../", ".\\", "..\\", "$", "%")):
        return True
    if _DRIVE.match(name) or "\\" in name:
        return True
    lowered = name.lower().rstrip("/")
    if "/" in lowered and lowered.endswith(_MODEL_SUFFIXES):
        return True
    return lowered.count("/") > 1


def model_slug(name: str) -> str:
    """The slug a model is published under; a path gives only its file's stem.

    A model named by its path (`/home/<user>/m.gguf`, `<drive>:\\models\\x.gguf`,
    `<home>/models/llama-7b.Q4_K_M.gguf`) keeps only the file name, without its weights
    extension: the directories are where someone put it, which can name a user, a team or a
    site, and never what was measured. The stem then goes through `benchlab.ids.slug`, the
    same rule as every other part of a spec id (lower case; anything but letters, digits,
    `.` and `+` becomes `-`), so `llama-7b.Q4_K_M` becomes `llama-7b.q4-k-m`, the name
    `bench run` files the same model under. A name that is not a path is slugged whole
    (`meta-llama/Llama-3.1-8B` becomes `meta-llama-llama-3.1-8b`).
    """
    text = name.strip()
    if _is_path(text):
        text = re.split(r"[\\/]+", text.rstrip("\\/"))[-1]
        for suffix in _MODEL_SUFFIXES:
            if text.lower().endswith(suffix) and len(text) > len(suffix):
                text = text[: -len(suffix)]
                break
    return slug(text)


@functools.cache
def _builtin_policy() -> Policy:
    return build_policy(RedactionConfig())


def check_public_field(field: str, value: str, policy: Policy | None = None) -> None:
    """Raise `SchemaError` unless `value` is a safe value for the public id `field`.

    Safe means: the field's charset (letters, digits, `. _ + -`; tags also `:` and `=`),
    at most `MAX_LENGTH` characters, no `..`, no path separator or `@` (the charset keeps
    both out), not an IP address, and no tell of any class under `policy` (the built-in
    tell classes when None; pass the store's policy to refuse its known host and user
    names too). Unknown fields are a programming error (`ValueError`).
    """
    shape = PUBLIC_ID_FIELDS.get(field)
    if shape is None:
        known = ", ".join(PUBLIC_ID_FIELDS)
        raise ValueError(f"{field!r} is not a public id field (one of {known})")
    if not isinstance(value, str) or not value:
        raise SchemaError(f"{field}: empty or not a string ({value!r})")
    shown = value if len(value) <= MAX_LENGTH else value[:MAX_LENGTH] + "…"
    if len(value) > MAX_LENGTH:
        raise SchemaError(
            f"{field}: {len(value)} characters (at most {MAX_LENGTH}); a public id is a short "
            f"name, not a path or a description"
        )
    if any(c in value for c in "/\\@") or _ESCAPED_SEPARATOR.search(value):
        raise SchemaError(
            f"{field}: {shown!r} holds a path separator or '@'; public ids name a thing, "
            f"never where it lives (use benchlab.redact.shapes.model_slug for a model path)"
        )
    if not shape.fullmatch(value) or ".." in value:
        allowed = "letters, digits and . _ + -" + (" : =" if field == "tags" else "")
        raise SchemaError(f"{field}: {shown!r} has characters outside {allowed}")
    if _is_ip(value):
        raise SchemaError(f"{field}: {value!r} is an IP address; give the machine a name")
    hits = find(policy if policy is not None else _builtin_policy(), [value])
    if hits:
        classes = ", ".join(sorted({h.tell_class for h in hits}))
        raise SchemaError(
            f"{field}: the value would publish a tell ({classes}); choose a name that says "
            f"what the thing is, not where or whose it is"
        )


def _is_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return re.fullmatch(r"(?:ip-)?\d{1,3}(?:-\d{1,3}){3}", value) is not None
    return True


def _short(host: str) -> str:
    return host.strip().rstrip(".").split(".", 1)[0].casefold()


def refuse_hostname_as_id(machine_id: str, hostnames: Iterable[str], allow_public: bool) -> None:
    """Raise `ConfigError` when `machine_id` is one of `hostnames`, unless `allow_public`.

    A machine id is in every public run id; a host name is private (DESIGN.md invariant
    5). Onboarding defaults to the host name, so the two meet by accident. Names compare
    case-insensitively and by short name, so `GPU-Box-7` is refused for the host
    `gpu-box-7.lab.example` and `pi5.example` for the host `pi5`. Addresses and `localhost` name no
    machine and are skipped. `allow_public` is the user's word that the name is public.
    """
    if allow_public:
        return
    wanted = _short(machine_id)
    if not wanted:
        return
    for host in hostnames:
        if not host or not host.strip() or _is_ip(host.strip()):
            continue
        if _short(host) in ("", "localhost"):
            continue
        if _short(host) == wanted:
            raise ConfigError(
                f"machine id {machine_id!r} is the host name of this machine, and a machine "
                f"id is published in every run id; choose another machine_id, or say that "
                f"the host name is public"
            )
