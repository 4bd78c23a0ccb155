"""A run's samples per metric (`metric_samples`, ARCHITECTURE.md, Compare): what the gate
lets through from another clone, and what an import of llama-bench output writes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from benchlab.catalog import gate
from benchlab.cli import main
from benchlab.layout import read_model
from benchlab.models import RunRecord

DATA = Path(__file__).resolve().parents[1] / "data" / "migrate"
GOOD = {"decode_tok_per_sec": {"n": 5, "mean": 118.88, "sd": 1.04}}


def _entry(samples: Any) -> dict[str, Any]:
    return {
        "run_id": "r1-20260101T000000Z",
        "machine_id": "m1",
        "timestamp": "2026-01-01T00:00:00Z",
        "model": "m",
        "precision": "q4_0",
        "metric_samples": samples,
    }


@pytest.mark.parametrize(
    ("samples", "problem"),
    [
        (GOOD, None),
        (None, None),
        ({"decode_tok_per_sec": {"n": 1, "mean": 1.0, "sd": 0.0}}, "decode_tok_per_sec.n"),
        ({"decode_tok_per_sec": {"n": 10**7, "mean": 1.0, "sd": 0.0}}, "decode_tok_per_sec.n"),
        ({"decode_tok_per_sec": {"n": 5, "mean": 1e13, "sd": 0.0}}, "decode_tok_per_sec.mean"),
        ({"decode_tok_per_sec": {"n": 5, "mean": 1.0, "sd": -1.0}}, "decode_tok_per_sec.sd"),
        ({"decode_tok_per_sec": {"n": 5, "mean": 1.0}}, "expected {n, mean, sd}"),
        ({"Bad Name": {"n": 5, "mean": 1.0, "sd": 0.1}}, "not a metric name"),
        ([1, 2], "expected an object"),
    ],
)
def test_the_gate_bounds_samples_and_the_schema_agrees(samples: Any, problem: str | None) -> None:
    entry = _entry(samples)
    found = gate.line_problem(entry)
    if problem is None:
        assert found is None
    else:
        assert found is not None and found.startswith("metric_samples") and problem in found
    valid = jsonschema.Draft202012Validator(gate.line_schema()).is_valid(entry)
    assert valid == (problem is None)


def test_a_llama_bench_import_keeps_each_tests_samples(store: Path) -> None:
    path = DATA / "llama-bench.json"
    assert main(["--store", str(store), "migrate", str(path), "--machine-id", "rig"]) == 0
    [run_dir] = [p for p in (store / "runs" / "by-machine" / "rig").iterdir() if p.is_dir()]
    record = read_model(run_dir / "record.json", RunRecord)
    assert record.metric_samples is not None
    decode = record.metric_samples["decode_tok_per_sec"]
    assert (decode.n, decode.mean, decode.sd) == (5, pytest.approx(118.881588), 1.041811)
    prefill = record.metric_samples["prefill_tok_per_sec"]
    assert (prefill.n, prefill.mean, prefill.sd) == (5, pytest.approx(7100.002165), 140.34152)
    assert main(["--store", str(store), "catalog", "build"]) == 0
    [shard] = (store / "catalog" / "rig").glob("*.jsonl")
    [line] = shard.read_text().splitlines()
    entry = json.loads(line)
    assert entry["metric_samples"]["decode_tok_per_sec"]["n"] == 5
    assert (
        entry["metric_samples"]["baseline_tok_per_sec"]
        == entry["metric_samples"]["decode_tok_per_sec"]
    )  # llama-bench's batch-1 point is its tg test
    assert set(entry["metric_samples"]) <= {k for k, v in entry.items() if v is not None}
