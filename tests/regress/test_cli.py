"""`bench regression` end to end over a catalog.json, with CI-gate exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchlab.cli import main
from benchlab.layout import atomic_write_json


def _entry(i: int, machine: str, value: float) -> dict:
    stamp = f"202601{1 + i // 24:02d}T{i % 24:02d}0000Z"
    return {
        "run_id": f"{machine}-smollm2-135m-q8-batch-abcd1234-{stamp}",
        "machine_id": machine,
        "timestamp": f"2026-01-{1 + i // 24:02d}T{i % 24:02d}:00:00Z",
        "model": "SmolLM2-135M",
        "model_id": "smollm2-135m",
        "precision": "q8",
        "backend": "reference",
        "mode": "batch",
        "status": "ok",
        "tags": [],
        "peak_tok_per_sec": value,
    }


@pytest.fixture
def catalog(store: Path) -> Path:
    rng = np.random.default_rng(7)
    drop = [100 * (0.75 if i >= 20 else 1.0) * (1 + rng.normal(0, 0.02)) for i in range(40)]
    flat = [50 * (1 + rng.normal(0, 0.02)) for i in range(40)]
    runs = [_entry(i, "pi5", v) for i, v in enumerate(drop)]
    runs += [_entry(i, "laptop", v) for i, v in enumerate(flat)]
    runs.sort(key=lambda e: e["run_id"])
    atomic_write_json(
        store / "catalog.json",
        {
            "$schema": "benchmark/catalog.v1",
            "version": "1.0",
            "machines": {},
            "runs": runs,
            "index": {"by_model": {}, "by_precision": {}, "by_date": {}},
        },
    )
    return store


def test_detect_finds_the_step_and_exits_1(catalog: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["--store", str(catalog), "regression", "--detect", "--format", "json"]) == 1
    [step] = json.loads(capsys.readouterr().out)
    assert step["machine_id"] == "pi5" and step["kind"] == "regression"
    assert step["first_bad_run"].startswith("pi5-") and step["first_bad_run"].endswith("T200000Z")
    assert -30 < step["change"] < -20 and step["confidence"] > 0.99


def test_a_stable_machine_passes_the_gate(catalog: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["--store", str(catalog), "regression", "--machine", "laptop"]) == 0
    out = capsys.readouterr().out
    assert "laptop" in out and "median of 5 previous run(s)" in out


def test_latest_vs_named_baseline(catalog: Path, capsys: pytest.CaptureFixture) -> None:
    baseline = _entry(0, "pi5", 0)["run_id"]
    args = ["--store", str(catalog), "regression", "--machine", "pi5", "--baseline", baseline]
    assert main([*args, "--format", "json"]) == 1
    [row] = json.loads(capsys.readouterr().out)
    assert row["baseline"] == baseline and row["regression"] is True


def test_usage_errors_are_one_line(catalog: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["--store", str(catalog), "regression"]) == 2
    assert main(["--store", str(catalog), "regression", "--detect", "--metric", "nope"]) == 2
    assert main(["--store", str(catalog), "regression", "--machine", "x", "--threshold", "a"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 3
