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
    withhold_unsafe(entry, policy, ...)    empty every field whose value is not of its shape
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Iterable
from typing import Any

from benchlab.errors import ConfigError, SchemaError
from benchlab.ids import slug
from benchlab.metrics import unit_ok
from benchlab.redact.engine import find
from benchlab.redact.policy import Policy, RedactionConfig, build_policy

__all__ = [
    "MAX_LENGTH",
    "PUBLIC_ID_FIELDS",
    "PUBLIC_VALUE_SHAPES",
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

    A machine id is in every public run id; a host name is private (ARCHITECTURE.md,
    invariant 5). Onboarding defaults to the host name, so the two meet by accident. Names compare
    case-insensitively and by short name, so `GPU-Box-7` is refused for the host
    `gpu-box-7.lab.example` and `pi5.example` for the host `pi5`; an id that holds the host
    name as a part (`vm-a100` on the host `vm`) is refused too. Addresses and `localhost`
    name no machine and are skipped. `allow_public` is the user's word that the name is public.
    """
    if allow_public:
        return
    wanted = _short(machine_id)
    if not wanted:
        return
    for host in hostnames:
        if not host or not host.strip() or _is_ip(host.strip()):
            continue
        short = _short(host)
        if short in ("", "localhost"):
            continue
        if short == wanted:
            raise ConfigError(
                f"machine id {machine_id!r} is the host name of this machine, and a machine "
                f"id is published in every run id; choose another machine_id, or say that "
                f"the host name is public"
            )
        if contains_name(machine_id, short):
            raise ConfigError(
                f"machine id {machine_id!r} contains the host name {short!r} of this machine "
                f"as a part, and a machine id is published in every run id; choose another "
                f"machine_id, or say that the host name is public"
            )


def contains_name(machine_id: str, short_host: str) -> bool:
    """True when `short_host` is one of the dash/dot/underscore-separated parts of the id,
    or a run of them (`vm-a100` holds `vm`; `gpu-box-7-a` holds `box-7`); `pi5` does not
    hold `pi`. One-letter hosts are too common a part to refuse on."""
    if len(short_host) < 2:
        return False
    pattern = rf"(?:^|[-_.+]){re.escape(short_host)}(?:$|[-_.+])"
    return re.search(pattern, machine_id.casefold()) is not None


# --- the shapes of public values --------------------------------------------------------------
#
# The allow-list above says WHICH fields are public ids; the table below says what EVERY
# public catalog field may hold. A tell nobody has a detector for (a new host naming scheme,
# a path under a root nobody listed) still cannot be a build tag, a hex commit or a slug, so
# a value is published only when it has its field's shape and no tell; anything else is
# withheld (the field is left empty) and counted. Free text is the one shape that is
# scrubbed rather than matched, and it is bounded.

SLUG = "slug"  # letters, digits, `. _ + -`; at most MAX_LENGTH; no tell
NUMBER = "number"  # int or float (not a bool), or a list of them
BOOL = "bool"
BUILD_TAG = "build-tag"  # llama.cpp's b4567
HEX_COMMIT = "hex-commit"  # 7 to 40 hex digits
DIGEST = "digest"  # a content hash: hex, optionally `sha256:` first
ENUM = "enum"  # one of a few words the model itself fixes (status, failure kind)
TEXT = "text"  # bounded free text, scrubbed: no tell left, at most MAX_TEXT characters
STAMP = "stamp"  # an ISO-8601 time
TESTS = "tests"  # llama-bench test names: pp512, tg128@d64, pp512+tg128
PARAMS = "params"  # numbers, booleans or short slugs; text where the sweep says so
STRUCTURE = "structure"  # a nested value the catalog builds itself (batch curve)
ID = "id"  # a public id: refused, not withheld, when it is not one (check_public_field)
KV_TYPE = "kv-type"  # a ggml tensor type as llama-bench names a cache's: q4_0, f16, iq4_nl

MAX_TEXT = 160
"""A model's display name or a version string; a paragraph is a log, not a field."""

PUBLIC_VALUE_SHAPES: dict[str, tuple[str, ...]] = {
    "run_id": (ID,),
    "machine_id": (ID,),
    "model_id": (ID,),
    "precision": (ID,),
    "backend": (ID,),
    "mode": (ID,),
    "tags": (ID,),
    "timestamp": (STAMP,),
    "model": (TEXT,),
    "precision_family": (SLUG,),
    "status": (ENUM,),
    "failure_kind": (ENUM,),
    "gate": (ENUM,),
    "gate_detail": (TEXT,),
    "outlier_reason": (TEXT,),  # a head mark's reason (catalog.marks), never in a shard
    "series": (SLUG,),
    "spec_id": (SLUG,),
    "model_digest": (DIGEST,),
    "model_size": (NUMBER,),
    "model_params": (NUMBER,),
    "backend_version": (TEXT,),
    "backend_build": (NUMBER,),
    "backend_commit": (HEX_COMMIT,),
    "revision": (BUILD_TAG, HEX_COMMIT, SLUG),
    "threads": (NUMBER,),
    "prompt_tokens": (NUMBER,),
    "gen_tokens": (NUMBER,),
    "depth": (NUMBER,),
    "batch_sizes": (NUMBER,),
    "n_batch": (NUMBER,),
    "n_ubatch": (NUMBER,),
    "gpu_layers": (NUMBER,),
    "flash_attn": (BOOL,),
    "type_k": (KV_TYPE,),
    "type_v": (KV_TYPE,),
    "settings": (DIGEST,),  # a digest of a device's env and workdir, never their values
    "axes": (PARAMS,),
    "tests": (TESTS,),
    "attempt": (NUMBER,),
    "attempts": (NUMBER,),
    "warnings": (NUMBER,),
    "samples": (NUMBER,),
    "metric_samples": (STRUCTURE,),
    "peak_tok_per_sec": (NUMBER,),
    "baseline_tok_per_sec": (NUMBER,),
    "speedup": (NUMBER,),
    "prefill_tok_per_sec": (NUMBER,),
    "decode_tok_per_sec": (NUMBER,),
    "prefill_stddev": (NUMBER,),
    "decode_stddev": (NUMBER,),
    "peak_rss_mb": (NUMBER,),
    "gpu_mem_peak_mb": (NUMBER,),
    "joules_per_token": (NUMBER,),
    "decode_ms_per_token": (NUMBER,),
    "ttft_ms": (NUMBER,),
    "time_s": (NUMBER,),
    "mem_bytes": (NUMBER,),
    "track_value": (NUMBER,),
    "path": (STRUCTURE,),
    "batch_curve": (STRUCTURE,),
    "extra_metrics": (STRUCTURE,),
}
"""Every field a catalog entry may publish, and the shapes its value may have. A field
not listed here is withheld whatever it holds."""

_ENUMS: dict[str, frozenset[str]] = {
    "status": frozenset({"ok", "failed"}),
    "failure_kind": frozenset({"transport", "measurement", "config", "parse"}),
    "gate": frozenset({"passed", "failed", "unknown"}),
}
_PATTERNS: dict[str, re.Pattern[str]] = {
    BUILD_TAG: re.compile(r"b\d{1,7}"),
    HEX_COMMIT: re.compile(r"[0-9a-fA-F]{7,40}"),
    DIGEST: re.compile(r"(?:sha256:|sha1:|md5:)?[0-9a-f]{16,128}"),
    STAMP: re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ][0-9:.]{2,18}(?:Z|[+-]\d{2}:?\d{2})?)?"),
    TESTS: re.compile(r"[a-z]{2}\d{1,7}(?:[+@][a-z]{1,2}\d{1,7}){0,3}"),
    KV_TYPE: re.compile(
        r"(?i)(?:f16|f32|f64|bf16|i8|i16|i32|i?q[1-8](?:_[0-9a-z]{1,2}){0,2}|tq[12]_0)"
    ),
    "path": re.compile(
        r"runs/(?:by-machine|public)/[A-Za-z0-9][A-Za-z0-9._+-]*/[A-Za-z0-9][A-Za-z0-9._+-]*/"
    ),
}
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u202a-\u202e\u2066-\u2069]")
_NOT_SEEN = object()


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _string_shape(kind: str, value: str, policy: Policy) -> bool:
    """True when a string has the shape `kind` and no tell under `policy`."""
    if kind in (SLUG, TESTS, BUILD_TAG, HEX_COMMIT, DIGEST, STAMP, KV_TYPE):
        if len(value) > MAX_LENGTH and kind != DIGEST:
            return False
        if kind == SLUG:
            if not _ID_SHAPE.fullmatch(value) or ".." in value or _is_ip(value):
                return False
        elif not _PATTERNS[kind].fullmatch(value):
            return False
        if kind in (HEX_COMMIT, DIGEST, STAMP, KV_TYPE):
            return True  # nothing of that alphabet is a name
    elif kind == TEXT:
        if len(value) > MAX_TEXT or _CONTROL.search(value):
            return False
    else:
        return False
    return not find(policy, [value])


def value_shape_ok(
    field: str, value: Any, policy: Policy, public_text: frozenset[str] = frozenset()
) -> bool:
    """True when `value` may be published in `field` (PUBLIC_VALUE_SHAPES); None always may.

    `axes` (a sweep's params) hold numbers, booleans or short slugs, or lists of them; a
    param the store's sweeps declare as `public_text` may hold bounded, tell-free text."""
    if value is None:
        return True
    shapes = PUBLIC_VALUE_SHAPES.get(field)
    if shapes is None:
        return False
    if field == "extra_metrics":
        return _extras_ok(value, policy)
    if field == "metric_samples":
        return _samples_ok(value)
    for kind in shapes:
        if kind in (ID, STRUCTURE):
            return _structure_ok(field, value)
        if kind == NUMBER:
            if _is_number(value) or (isinstance(value, list) and all(_is_number(v) for v in value)):
                return True
        elif kind == BOOL:
            if isinstance(value, bool):
                return True
        elif kind == ENUM:
            if value in _ENUMS.get(field, ()):
                return True
        elif kind == TESTS:
            if isinstance(value, list) and all(
                isinstance(v, str) and _string_shape(TESTS, v, policy) for v in value
            ):
                return True
        elif isinstance(value, str) and _string_shape(kind, value, policy):
            return True
    return False


_EXTRA_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")


def _extras_ok(value: Any, policy: Policy) -> bool:
    """A run's declared metrics (ARCHITECTURE.md, Metrics): names of the declared pattern,
    numbers, a direction, and a unit that is short tell-free text (a config wrote it)."""
    if not isinstance(value, dict):
        return False
    for name, held in value.items():
        if not isinstance(name, str) or not _EXTRA_NAME.fullmatch(name):
            return False
        if not isinstance(held, dict) or not _is_number(held.get("value")):
            return False
        unit = held.get("unit")
        if held.get("better") not in ("higher", "lower") or not isinstance(unit, str):
            return False
        if not unit_ok(unit) or not _string_shape(TEXT, unit, policy):
            return False
    return True


def _samples_ok(value: Any) -> bool:
    """A run's samples per metric: metric names and numbers only ({n, mean, sd})."""
    return isinstance(value, dict) and all(
        isinstance(name, str)
        and _EXTRA_NAME.fullmatch(name) is not None
        and isinstance(held, dict)
        and sorted(held) == ["mean", "n", "sd"]
        and all(_is_number(v) for v in held.values())
        for name, held in value.items()
    )


def _structure_ok(field: str, value: Any) -> bool:
    """The run's path is built by the catalog from checked ids; the batch curve from the
    batch file's numbers, which the entry's model (BatchCurvePoint) types as numbers."""
    if field == "path":
        return isinstance(value, str) and _PATTERNS["path"].fullmatch(value) is not None
    return field == "batch_curve" and isinstance(value, list)


def param_shape_ok(
    name: str, value: Any, policy: Policy, public_text: frozenset[str] = frozenset()
) -> bool:
    """One param of `axes`: a number, a boolean, a short tell-free slug (or a list of
    those); bounded, tell-free text only where a sweep declared `name` as public text."""
    values = value if isinstance(value, list) else [value]
    for item in values:
        if item is None or isinstance(item, bool) or _is_number(item):
            continue
        if not isinstance(item, str):
            return False
        kind = TEXT if name in public_text else SLUG
        if not _string_shape(kind, item, policy):
            return False
    return _ID_SHAPE.fullmatch(name) is not None and len(name) <= MAX_LENGTH


def withhold_unsafe(
    entry: dict[str, Any],
    policy: Policy,
    public_text: frozenset[str] = frozenset(),
    passed: set[tuple[str, Any]] | None = None,
) -> list[str]:
    """Empty every field (and every param of `axes`) whose value is not of its declared
    shape; return the names withheld (`revision`, `axes.model_path`, ...), in order.

    `passed`: (field, string) pairs already found safe under the same policy, shared by the
    entries of one build (a fleet repeats the same commits and params a million times).
    Numbers, booleans and the values unique to a run (its id, path, time) are checked in
    place, never remembered, so the set grows with the fleet's distinct names only."""
    seen = passed if passed is not None else set()
    withheld: list[str] = []
    for field in list(entry):
        value = entry[field]
        if value is None:
            continue
        kinds = PUBLIC_VALUE_SHAPES.get(field)
        kind = type(value)
        if kinds is not None and (
            ((kind is int or kind is float) and NUMBER in kinds) or (kind is bool and BOOL in kinds)
        ):
            continue
        if kinds is not None and kinds[0] == ID:
            continue  # check_public_field's to refuse
        if field == "axes" and kind is dict:
            _withhold_params(entry, policy, public_text, seen, withheld)
            continue
        if field == "tests" and kind is list:
            if not all(_test_ok(name, policy, seen) for name in value):
                withheld.append(field)
                entry[field] = []
            continue
        memo = kind is str and kinds is not None and kinds[0] not in _UNREMEMBERED
        if memo and (field, value) in seen:
            continue
        if value_shape_ok(field, value, policy, public_text):
            if memo and len(seen) < _MEMO_LIMIT:
                seen.add((field, value))
            continue
        withheld.append(field)
        if kinds is None:
            del entry[field]
        elif field == "model":
            entry[field] = entry.get("model_id")  # required: the checked slug stands in
        else:
            entry[field] = "" if field == "timestamp" else None
    return withheld


def _test_ok(name: Any, policy: Policy, seen: set[tuple[str, Any]]) -> bool:
    if not isinstance(name, str):
        return False
    if ("tests", name) in seen:
        return True
    if not _string_shape(TESTS, name, policy):
        return False
    if len(seen) < _MEMO_LIMIT:
        seen.add(("tests", name))
    return True


_UNREMEMBERED = frozenset({ID, STRUCTURE, STAMP, HEX_COMMIT, DIGEST})
"""Shapes checked by a pattern alone (no tell scan): cheaper to match than to remember."""
_MEMO_LIMIT = 200_000


def _withhold_params(
    entry: dict[str, Any],
    policy: Policy,
    public_text: frozenset[str],
    seen: set[tuple[str, Any]],
    withheld: list[str],
) -> None:
    kept = {}
    for name, param in entry["axes"].items():
        key = ("axes." + name, repr(param))  # repr: 1, 1.0 and True stay apart
        if key in seen or param_shape_ok(name, param, policy, public_text):
            if len(seen) < _MEMO_LIMIT:
                seen.add(key)
            kept[name] = param
        else:
            withheld.append(f"axes.{name}")
    entry["axes"] = kept or None


WITHHELD = ": withheld "
"""The mark of a build warning about withheld values: `<run>: withheld <field>, ...: why`."""


def withheld_counts(warnings: Iterable[str]) -> dict[str, int]:
    """How many values each field had withheld, from a build's warnings."""
    counts: dict[str, int] = {}
    for line in warnings:
        _, mark, rest = line.partition(WITHHELD)
        if mark:
            for field in rest.split(": ", 1)[0].split(", "):
                counts[field.strip()] = counts.get(field.strip(), 0) + 1
    return counts


def withheld_summary(warnings: Iterable[str]) -> str:
    """`; 3 values withheld (revision 2, axes.model_path 1)`, or "" when none were; the
    fields most often withheld first, six at most (the warnings name every run)."""
    counts = withheld_counts(warnings)
    if not counts:
        return ""
    total = sum(counts.values())
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    fields = ", ".join(f"{name} {n}" for name, n in ranked[:_SHOWN])
    if len(ranked) > _SHOWN:
        fields += f", {len(ranked) - _SHOWN} more fields"
    return f"; {total} value{'s' if total != 1 else ''} withheld ({fields})"


_SHOWN = 6


def public_commit(value: Any) -> str | None:
    """`value` when it has the shape of a hex commit (7 to 40 hex digits), else None.

    An imported llama-bench row's `build_commit` is whatever the build printed: a commit,
    `unknown`, or (built from a fork's checkout) a remote URL or a path. Only the first is
    a version; the rest name a host, a user or a directory, so they are withheld at import."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    return text if _PATTERNS[HEX_COMMIT].fullmatch(text) else None


def public_kv_type(value: Any) -> str | None:
    """A KV cache type (`q4_0`, `f16`, `iq4_nl`) where it has that shape, else None."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    return text if _PATTERNS[KV_TYPE].fullmatch(text) else None


_MODEL_TYPE = re.compile(r"[A-Za-z0-9][\w.+-]*(?: [\w.+()?-]+){0,8}")
"""`?` is llama.cpp's own spelling of a size it cannot tell (`llama ?B all F32`)."""


def public_model_type(value: Any) -> str | None:
    """llama-bench's `model_type` (`llama 7B Q4_0`, `qwen3 8B Q4_K - Medium`) where it has
    that shape (words of letters, digits and `. + _ - ( ) ?`, at most 64 characters, no
    tell), else None: the field is published, so a path or a host in it is withheld."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    if len(text) > 64 or not _MODEL_TYPE.fullmatch(text):
        return None
    return None if find(_builtin_policy(), [text]) else text
