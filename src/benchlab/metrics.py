"""The one place a metric is derived from a backend's raw result.

The runner calls `derive` once, when a point has run, and stores the numbers in
record.json; the progress line, the catalog, the query verbs, the charts, the site and the
exporter all read them from there and never recompute them from kernel.json. A run dir
without a record (an import, a hand-made seed-format run) goes through this same function,
so a number means the same thing whichever way it arrived.

Rules, in one place:
- prefill: the kernel prefill point at the spec's prompt size; else the largest prompt
  measured (the test name says which: `pp64`);
- decode: the kernel's decode result; `decode_ms_per_token` its per-token median;
- peak / baseline / speedup: batch.json's peak and batch-1 baseline, speedup = peak/baseline
  when batch.json does not state it;
- stddev and samples: where the backend measured them (llama-bench's `stddev_ts`, reps).
A backend's own extra metrics (`ParsedRun.metrics`) are kept beside these but never
override them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from benchlab.errors import ParseError
from benchlab.identity import test_names

HEADLINE = (
    "peak_tok_per_sec",
    "baseline_tok_per_sec",
    "speedup",
    "prefill_tok_per_sec",
    "decode_tok_per_sec",
)
"""The metrics a catalog entry carries; higher is better for each."""

SPREAD = ("prefill_stddev", "decode_stddev")
"""Standard deviations (tok/s) of the headline prefill and decode numbers, where measured."""

DEFAULT_METRIC = "peak_tok_per_sec"


def _get(obj: Any, name: str) -> Any:
    if obj is None:
        return None
    if isinstance(obj, Mapping):
        return obj.get(name)
    value = getattr(obj, name, None)
    if value is None and getattr(obj, "model_extra", None):
        value = obj.model_extra.get(name)
    return value


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def chosen_prefill(kernel: Any, prompt_tokens: int | None) -> Any:
    """The prefill point the headline number comes from (see the module rules)."""
    points = list(_get(_get(kernel, "benchmark"), "prefill") or [])
    if not points:
        return None
    exact = [p for p in points if _get(p, "tokens") == prompt_tokens]
    return exact[0] if exact else max(points, key=lambda p: _get(p, "tokens") or 0)


def derive(
    kernel: Any,
    batch: Any,
    *,
    prompt_tokens: int | None = None,
    extra: Mapping[str, Any] | None = None,
) -> tuple[dict[str, float], list[str]]:
    """(metrics, llama-bench style test names) of one run from its kernel and batch results.

    `kernel` and `batch` may be the pydantic models or their JSON dicts. Absent values are
    dropped (an absent metric is absent, not zero); a non-finite one is a ParseError.
    """
    metrics: dict[str, float | None] = {}
    prefill = chosen_prefill(kernel, prompt_tokens)
    decode = _get(_get(kernel, "benchmark"), "decode")
    if prefill is not None:
        metrics["prefill_tok_per_sec"] = _number(_get(prefill, "tok_per_sec"))
        metrics["prefill_stddev"] = _number(_get(prefill, "stddev_ts"))
    if decode is not None:
        metrics["decode_tok_per_sec"] = _number(_get(decode, "tok_per_sec"))
        metrics["decode_ms_per_token"] = _number(_get(decode, "per_token_median_ms"))
        metrics["decode_stddev"] = _number(_get(decode, "stddev_ts"))
    reps = [_get(p, "reps") for p in (prefill, decode) if p is not None]
    reps = [r for r in reps if isinstance(r, int) and not isinstance(r, bool)]
    if reps:
        metrics["samples"] = float(min(reps))
    peak, baseline = _get(batch, "peak"), _get(batch, "baseline")
    peak_tps = _number(_get(peak, "agg_tok_per_sec"))
    if peak_tps is None:
        curve = [_number(_get(p, "agg_tok_per_sec")) for p in _get(batch, "points") or []]
        curve = [v for v in curve if v is not None]
        peak_tps = max(curve) if curve else None
    base_tps = _number(_get(baseline, "tok_per_sec"))
    speedup = _number(_get(peak, "speedup_vs_baseline"))
    if speedup is None and peak_tps is not None and base_tps:
        speedup = peak_tps / base_tps
    metrics.update(peak_tok_per_sec=peak_tps, baseline_tok_per_sec=base_tps, speedup=speedup)
    for key, value in (extra or {}).items():
        if key not in metrics or metrics[key] is None:
            metrics[key] = _number(value)
    depth = _get(prefill, "n_depth") or _get(decode, "n_depth")
    tests = test_names(
        _get(prefill, "tokens") if prefill is not None else None,
        _get(decode, "decode_steps") if decode is not None else None,
        depth if isinstance(depth, int) else None,
    )
    kept = {key: value for key, value in sorted(metrics.items()) if value is not None}
    for key, value in kept.items():
        if not math.isfinite(value):
            raise ParseError(f"metric {key!r} is not finite: {value!r}")
    return kept, tests
