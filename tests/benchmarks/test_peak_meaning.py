"""One metric name, one meaning: `peak_tok_per_sec` is a batched aggregate.

llama-bench measures one sequence; its batch.json holds the tg rate as the batch-1 point.
Before, that point was also reported as the "peak aggregate", so `best` and the by-machine
peak chart set a single-stream decode figure against another backend's batched one."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchlab.benchmarks import get_backend
from benchlab.metrics import derive

from .conftest import derived

DATA = Path(__file__).resolve().parents[1] / "data" / "llama_bench"


def test_a_llama_bench_run_has_no_peak_aggregate(spec_factory, envelope_factory):
    spec = spec_factory(
        "llama-bench", model="qwen", precision="q4", prompt_tokens=512, gen_tokens=128
    )
    text = (DATA / "b5163-cuda-2025-04.json").read_text()
    parsed = get_backend("llama-bench").parse(envelope_factory(text), spec, "rid")
    assert parsed.batch.peak is None
    metrics = derived(parsed, spec)
    assert metrics["decode_tok_per_sec"] == pytest.approx(118.881588)
    assert metrics["baseline_tok_per_sec"] == pytest.approx(118.881588)  # batch 1: measured
    assert "peak_tok_per_sec" not in metrics and "speedup" not in metrics  # not measured


def _batch(points: list[tuple[int, float]], peak: tuple[int, float] | None) -> dict:
    return {
        "points": [{"batch": b, "agg_tok_per_sec": v} for b, v in points],
        "baseline": {"batch": 1, "tok_per_sec": points[0][1]} if points else None,
        "peak": None if peak is None else {"batch": peak[0], "agg_tok_per_sec": peak[1]},
    }


@pytest.mark.parametrize(
    ("batch", "peak", "speedup"),
    [
        (_batch([(1, 20.0)], (1, 20.0)), None, None),  # an older llama-bench batch.json
        (_batch([(1, 20.0)], None), None, None),
        (_batch([(1, 20.0), (4, 50.0)], (4, 50.0)), 50.0, 2.5),
        (_batch([(1, 20.0), (4, 50.0)], None), 50.0, 2.5),  # from the curve
        (_batch([(1, 20.0), (2, 15.0)], (1, 20.0)), 20.0, 1.0),  # batching did not help
    ],
)
def test_the_peak_needs_a_measured_batch_over_one(
    batch: dict, peak: float | None, speedup: float | None
) -> None:
    metrics, _ = derive({"benchmark": {}}, batch)
    assert metrics.get("peak_tok_per_sec") == peak
    assert metrics.get("speedup") == (pytest.approx(speedup) if speedup else None)
