"""Measurement identity: what makes two runs the same measurement, defined once.

Two runs measure the same thing when every field in `IDENTITY_FIELDS` is equal. The time
and the run id are not part of it. Two of those fields form the *version axis*
(`VERSION_FIELDS`): the backend's build and the declared revision of the thing under test.
A *series* is a measurement followed along that axis and over time, so its key is the
identity without them. The regression detector, `best`/`table`/`compare`, the charts, the
site and the exporter all group by `series_key` (or its short `series_id`), so a run at
two threads never lands in the history of the same run at one thread, and a new llama.cpp
build shows up as a step inside one series rather than as a new series.

This module imports nothing heavy: the query path (`bench best` must answer in under a
second, interpreter included) reads entries through it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from benchlab.ids import slug

if TYPE_CHECKING:  # the models' pydantic stays off the query fast path
    from benchlab.models import RunSpec

IDENTITY_FIELDS: tuple[str, ...] = (
    "machine_id",
    "model_id",
    "model_digest",
    "model_size",
    "model_params",
    "precision",
    "backend",
    "backend_version",
    "backend_build",
    "backend_commit",
    "mode",
    "threads",
    "prompt_tokens",
    "gen_tokens",
    "depth",
    "batch_sizes",
    "n_batch",
    "n_ubatch",
    "gpu_layers",
    "flash_attn",
    "type_k",
    "type_v",
    "axes",
    "revision",
    "settings",
)
"""Every field that shapes the number. A catalog entry carries each of them (null where the
run did not say), and so does the `identity` of a run record. `settings` is a digest of the
device's env and workdir (`ids.settings_digest`), never their values."""

OPTIONAL_FIELDS: frozenset[str] = frozenset({"settings"})
"""Fields left out of `series_id` while null: a run that does not set them keeps the series
id it had before they existed."""

VERSION_FIELDS: tuple[str, ...] = ("backend_version", "backend_build", "backend_commit", "revision")
"""The version axis: builds and revisions are compared along a series, not split into new
series (as asv follows one benchmark across commits)."""

SERIES_FIELDS: tuple[str, ...] = tuple(f for f in IDENTITY_FIELDS if f not in VERSION_FIELDS)

AXIS_PARAMS_IGNORED = frozenset(
    {
        # How to run, not what is measured: paths, binaries, patience, repetitions.
        "model_path",
        "binary",
        "timeout_s",
        "extra_args",
        "reps",
        "seed",
        "command",
        "argv",
        "env",
        "cwd",
        "fields",
        "pattern",
        "version",
        "revision",
        "metrics",  # declarations of what a run reports (unit, direction), not an axis
        # Mapped onto named identity fields.
        "batch",
        "ubatch",
        "n_gpu_layers",
        "flash_attn",
        "depth",
        "type_k",
        "type_v",
    }
)
"""`spec.params` keys that are not identity axes of their own. Every other param is an axis
the sweep may vary (prefill_sizes, batch_steps ...) and is kept under `axes`."""

MODELESS_BACKENDS = frozenset({"llama-bench"})
"""Backends with no modes of their own: `mode` does not shape their numbers, so it is left
out of their identity (a live llama-bench point and an imported llama-bench file line up)."""

_QUANT_WORDS = {"small": "s", "medium": "m", "large": "l", "extra small": "xs", "xs": "xs"}
_QUANT_FROM_LLAMA = re.compile(
    r"\b(?P<base>(?:i?q\d(?:_[0-9a-z]+)*|f16|f32|bf16))(?:\s*-\s*(?P<size>[a-z ]+?))?\s*$"
)
_FAMILY = re.compile(r"^(?:i?q(\d)|(f16|f32|bf16|f64|int8|int4|fp8))")


def normalize_precision(text: str) -> str:
    """The exact quant type in the fleet's spelling: llama-bench's `Q4_K - Medium` and a
    file's `Q4_K_M` both become `q4_k_m`; `F16` becomes `f16`. Unknown text is lower-cased
    with spaces as dashes, so nothing is lost."""
    lowered = " ".join(text.strip().lower().split())
    match = _QUANT_FROM_LLAMA.search(lowered)
    if match is None:
        return lowered.replace(" ", "-")
    base, size = match.group("base"), match.group("size")
    if size:
        short = _QUANT_WORDS.get(size.strip())
        if short:
            base = f"{base}_{short}"
    return base


def precision_family(precision: str) -> str:
    """The family a filter may ask for: `q4_k_m`, `q4_0` and `iq4_xs` are all `q4`."""
    match = _FAMILY.match(precision.lower())
    if match is None:
        return precision.lower()
    return f"q{match.group(1)}" if match.group(1) else match.group(2)


def test_names(prefill_tokens: int | None, gen_tokens: int | None, depth: int | None) -> list[str]:
    """The tests in llama-bench's own spelling: `pp512`, `tg128`, `pp512@d128`."""
    at = f"@d{depth}" if depth else ""
    names = []
    if prefill_tokens:
        names.append(f"pp{prefill_tokens}{at}")
    if gen_tokens:
        names.append(f"tg{gen_tokens}{at}")
    return names


# --- the test of one metric ----------------------------------------------------------------

WORKLOAD_FIELDS: tuple[str, ...] = ("prompt_tokens", "gen_tokens", "depth")
"""The workload of a run as a whole; a metric's own test holds only part of it
(`metric_test_key`)."""

SEPARATE_TEST_BACKENDS = frozenset({"llama-bench"})
"""Backends that measure prompt processing and generation as separate tests: llama-bench's
tg row has n_prompt 0, so the prompt size of the run does not shape its decode rate."""

_TEST_NAME = re.compile(r"^(pp|tg)(\d+)(?:@d(\d+))?$")


def test_key(test: str, params: Mapping[str, Any]) -> tuple[Any, ...]:
    """The test a metric of a run measures, as a hashable key: only what shapes that
    metric (ARCHITECTURE.md, Measurement identity). `test` is the metric's
    (`metrics.Metric.test`, read through `metrics.test_key`); `params`: an entry or an
    identity (its workload fields, `backend` and `tests`).

    - `pp` (prefill rate, time to first token): the prompt size measured and the depth;
    - `tg` (decode rate, time per token): the tokens generated and the depth, and the
      prompt too where the backend decodes after the prompt in one context (every backend
      but llama-bench, whose tg test starts from an empty context);
    - `batch1` (the batch-1 baseline): llama-bench's is its tg test again, any other
      backend's the whole workload;
    - any other metric (`batch`, `run`): the whole workload (prompt, generation, depth).

    The sizes are the ones measured: the run's test list (`pp256`, `tg128@d512`) where it
    names the test, else the workload fields, so a run whose prefill came from its largest
    measured size is never set against another's smaller one.
    """
    backend = params.get("backend")
    depth = params.get("depth") or 0
    separate = backend in SEPARATE_TEST_BACKENDS
    if test == "pp":
        return ("pp", _measured(params, "pp", "prompt_tokens"), depth)
    if test == "tg" or (separate and test == "batch1"):
        key: tuple[Any, ...] = ("tg", _measured(params, "tg", "gen_tokens"), depth)
        return key if separate else (*key, params.get("prompt_tokens"))
    return ("run", *(_frozen(params.get(name)) for name in WORKLOAD_FIELDS))


def _measured(params: Mapping[str, Any], kind: str, field: str) -> Any:
    """The size of the run's `kind` test (pp or tg) from its test list, else `field`."""
    for name in params.get("tests") or ():
        match = _TEST_NAME.match(str(name))
        if match is not None and match[1] == kind:
            return int(match[2])
    return params.get(field)


SCALAR_TYPES = frozenset({str, int, float, bool, type(None)})


def _frozen(value: Any) -> Any:
    if type(value) in SCALAR_TYPES:  # nearly every field: skip the ABC checks below
        return value
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), _frozen(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    return value


def series_key(entry: Mapping[str, Any]) -> tuple[Any, ...]:
    """The hashable key of an entry's series (identity less the version axis)."""
    return tuple(_frozen(entry.get(name)) for name in SERIES_FIELDS)


def identity_key(entry: Mapping[str, Any]) -> tuple[Any, ...]:
    """The hashable key of the exact measurement (series and version)."""
    return tuple(_frozen(entry.get(name)) for name in IDENTITY_FIELDS)


def series_id(entry: Mapping[str, Any]) -> str:
    """A short stable name for a series: safe in a file name, a URL and a label value."""
    fields = {
        name: entry.get(name)
        for name in SERIES_FIELDS
        if name not in OPTIONAL_FIELDS or entry.get(name) is not None
    }
    canonical = json.dumps(fields, sort_keys=True, separators=(",", ":"), default=str)
    return "s" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:12]


def series_of(entry: Mapping[str, Any]) -> str:
    """An entry's series id: the `series` every catalog entry carries (computed once, at
    build time), else computed here for a hand-made entry. Readers group by this, never by
    `series_key` themselves: the stored id is what keeps a 10,000-run site build fast."""
    return entry.get("series") or series_id(entry)


def shape(entry: Mapping[str, Any]) -> str:
    """The workload shape as people write it: `p32/n16`, `pp512@d128`, `b512/ub128`."""
    parts = []
    prompt, gen, depth = entry.get("prompt_tokens"), entry.get("gen_tokens"), entry.get("depth")
    if prompt or gen:
        parts.append(f"p{prompt or 0}/n{gen or 0}")
    if depth:
        parts.append(f"d{depth}")
    if entry.get("n_batch") or entry.get("n_ubatch"):
        parts.append(f"b{entry.get('n_batch') or '-'}/ub{entry.get('n_ubatch') or '-'}")
    if entry.get("flash_attn"):
        parts.append("fa")
    return " ".join(parts)


def series_label(entry: Mapping[str, Any]) -> str:
    """A one-line human name for a series, e.g. `local smollm2-135m f32 reference t2 p32/n16`."""
    threads = entry.get("threads")
    parts = [
        entry.get("machine_id"),
        entry.get("model_id") or entry.get("model"),
        entry.get("precision"),
        entry.get("backend"),
        f"t{threads}" if threads is not None else None,
        shape(entry) or None,
    ]
    return " ".join(str(p) for p in parts if p)


def build_label(entry: Mapping[str, Any]) -> str | None:
    """The backend build as people name it: its version string (`b4567 (1a2b3c4)`,
    `benchlab 0.1.0`), else `b<build number>`, else the commit's first 8 hex digits; None
    where the run did not say. `bench compare --by build` compares along it."""
    version = entry.get("backend_version")
    if version:
        return str(version)
    build = entry.get("backend_build")
    if build is not None:
        return f"b{build}"
    commit = entry.get("backend_commit")
    return str(commit)[:8] if commit else None


def version_label(entry: Mapping[str, Any]) -> str | None:
    """The whole version axis of one run: the build, plus `rev <revision>` where a sweep
    declared one; None when the run said nothing."""
    parts = [label] if (label := build_label(entry)) else []
    if entry.get("revision"):
        parts.append(f"rev {entry['revision']}")
    return " ".join(parts) or None


def axes_of(params: Mapping[str, Any]) -> dict[str, Any] | None:
    """The swept params that are identity axes of their own (scalars or lists of scalars)."""
    axes: dict[str, Any] = {}
    for key in sorted(params):
        if key in AXIS_PARAMS_IGNORED:
            continue
        value = params[key]
        if isinstance(value, (str, int, float, bool)) or value is None:
            axes[key] = value
        elif isinstance(value, Sequence) and all(
            isinstance(v, (str, int, float, bool)) for v in value
        ):
            axes[key] = list(value)
    return axes or None


def _int_or_none(value: Any) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def _flag(value: Any) -> bool | None:
    """On, off, or None for unknown and "auto" (llama-bench's -1: the build decides)."""
    text = str(value).strip().lower()
    if text in {"1", "true", "yes", "on", "enabled"}:
        return True
    if text in {"0", "false", "no", "off", "disabled"}:
        return False
    return None


def derive(
    *,
    machine_id: str,
    model_id: str,
    precision: str,
    backend: str | None,
    mode: str | None,
    threads: int | None = None,
    prompt_tokens: int | None = None,
    gen_tokens: int | None = None,
    batch_sizes: Sequence[int] | None = None,
    params: Mapping[str, Any] | None = None,
    revision: str | None = None,
    facts: Mapping[str, Any] | None = None,
    settings: str | None = None,
) -> dict[str, Any]:
    """A run's identity from what was asked (the spec) and what the backend observed.

    `facts` are what the backend reported about the run it actually made (llama-bench's
    n_threads, n_batch, build number ...); they win over what was asked, because the number
    was measured under them. Every field of `IDENTITY_FIELDS` is present, None where unknown.
    """
    params = params or {}
    facts = facts or {}
    asked: dict[str, Any] = {
        "machine_id": machine_id,
        "model_id": model_id,
        "model_digest": None,
        "model_size": None,
        "model_params": None,
        "precision": normalize_precision(precision),
        "backend": backend,
        "backend_version": params.get("version") if backend == "command" else None,
        "backend_build": None,
        "backend_commit": None,
        "mode": mode,
        "threads": threads,
        "prompt_tokens": prompt_tokens,
        "gen_tokens": gen_tokens,
        "depth": _int_or_none(params.get("depth")),
        "batch_sizes": sorted(batch_sizes) if batch_sizes else None,
        "n_batch": _int_or_none(params.get("batch")),
        "n_ubatch": _int_or_none(params.get("ubatch")),
        "gpu_layers": _int_or_none(params.get("n_gpu_layers")),
        "flash_attn": _flag(params.get("flash_attn")),
        "type_k": params.get("type_k"),
        "type_v": params.get("type_v"),
        "axes": axes_of(params),
        "revision": revision if revision is not None else params.get("revision"),
        "settings": settings,
    }
    for name, value in facts.items():
        if name in asked and value is not None:
            asked[name] = value
    if backend in MODELESS_BACKENDS:
        asked["mode"] = None
    if asked["flash_attn"] is not None:
        asked["flash_attn"] = _flag(asked["flash_attn"])
    for name in ("backend_version", "backend_commit", "revision", "type_k", "type_v"):
        if asked[name] is not None:
            asked[name] = str(asked[name])
    return asked


def spec_identity(
    spec: RunSpec,
    *,
    revision: str | None = None,
    settings: str | None = None,
    facts: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A sweep point's identity (`derive` of what its spec asks): the record's, with the facts
    its run reported, and the writer contract's before it runs, without them."""
    return derive(
        machine_id=spec.machine_id,
        model_id=slug(spec.model),
        precision=spec.precision,
        backend=spec.backend,
        mode=spec.mode,
        threads=spec.threads,
        prompt_tokens=spec.prompt_tokens,
        gen_tokens=spec.gen_tokens,
        batch_sizes=spec.batch_sizes,
        params=spec.params,
        revision=revision,
        facts=facts,
        settings=settings,
    )


# --- runs that did not record their thread count (ARCHITECTURE.md, Measurement identity) ---

THREADS_NOT_RECORDED = "threads-not-recorded"
"""The tag of a run with no recorded thread count that joined, or could not join, a series."""
SERIES_NOTE = "series_note"
"""The field (in memory, never stored) that says why such a run stands where it does."""
_BUT_THREADS = tuple(name for name in SERIES_FIELDS if name != "threads")


def _but_threads(entry: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple(_frozen(entry.get(name)) for name in _BUT_THREADS)


def join_unrecorded_threads(entries: Sequence[dict[str, Any]]) -> int:
    """Unknown is unknown: a run with no recorded thread count (an import that did not say)
    joins the one series it matches on every other field, tagged THREADS_NOT_RECORDED;
    where several series (thread counts) match it stands apart, tagged too, and its
    SERIES_NOTE names them. Returns how many runs joined a series.

    Run where a catalog is loaded, before any reader groups by series, so the detector,
    best, compare and the site see one grouping (a planted regression is listed once, not
    once per series the same measurement was split into)."""
    unrecorded = [e for e in entries if e.get("threads") is None]
    if not unrecorded:
        return 0
    near = {(e.get("machine_id"), e.get("model_id"), e.get("precision")) for e in unrecorded}
    candidates: dict[tuple[Any, ...], dict[str, int]] = {}
    seen: set[str] = set()  # a series' fields are its first run's: one key per series
    for entry in entries:
        threads = entry.get("threads")
        if threads is None or (
            (entry.get("machine_id"), entry.get("model_id"), entry.get("precision")) not in near
        ):
            continue
        series = series_of(entry)
        if series in seen:
            continue
        seen.add(series)
        candidates.setdefault(_but_threads(entry), {}).setdefault(series, threads)
    joined = 0
    for entry in unrecorded:
        matched = candidates.get(_but_threads(entry))
        if not matched:
            continue
        tags = entry.get("tags") or []
        entry["tags"] = sorted({*tags, THREADS_NOT_RECORDED})
        if len(matched) == 1:
            [(series, threads)] = matched.items()
            entry["series"] = series
            entry[SERIES_NOTE] = f"threads not recorded; joined the t{threads} series {series}"
            joined += 1
        else:
            counts = ", ".join(f"t{t}" for t in sorted(matched.values()))
            entry[SERIES_NOTE] = (
                f"threads not recorded; {len(matched)} series match it on every other field "
                f"({counts}), so it stands apart"
            )
    return joined
