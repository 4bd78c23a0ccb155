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


def test_a_llama_bench_import_names_the_machine(store: Path) -> None:
    """llama-bench's cpu_info, gpu_info and backends reach the machine's public specs and
    the inventory the Machines table reads; specs `bench onboard` wrote are never touched."""
    path = DATA / "llama-bench.json"
    assert main(["--store", str(store), "migrate", str(path), "--machine-id", "rig"]) == 0
    assert main(["--store", str(store), "catalog", "build"]) == 0
    specs = json.loads((store / "machines" / "rig" / "specs.json").read_text())
    assert specs["hardware"]["cpu"]["model"] == "AMD Ryzen 7 7800X3D 8-Core Processor"
    assert specs["hardware"]["gpu"] == [{"model": "NVIDIA GeForce RTX 4080"}]
    assert specs["runtime"] == {"backends": "CUDA"}
    assert specs["registered_at"] == "2025-04-24T11:58:50Z"  # the first test's time
    row = json.loads((store / "machines" / "catalog.json").read_text())["machines"]["rig"]
    assert row["cpu_model"] == "AMD Ryzen 7 7800X3D 8-Core Processor"
    assert row["gpu"] == "NVIDIA GeForce RTX 4080"

    onboarded = store / "runs" / "by-machine" / "own" / "specs.json"
    onboarded.parent.mkdir(parents=True)
    mine = {
        "$schema": "benchmark/machine-specs.v1",
        "machine_id": "own",
        "registered_at": "2026-01-01T00:00:00Z",
        "hardware": {"cpu": {"model": "Onboarded CPU"}},
        "os": {"name": "Linux"},
    }
    onboarded.write_text(json.dumps(mine))
    assert main(["--store", str(store), "migrate", str(path), "--machine-id", "own"]) == 0
    assert json.loads(onboarded.read_text()) == mine
