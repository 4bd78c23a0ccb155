"""Entry extraction from one run dir, and the winner rule for two entries with one id."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from tests.kit.runs import SEED_RUN_ID

from benchlab.catalog.extract import extract_entry
from benchlab.catalog.merge import winner
from benchlab.catalog.order import time_key
from benchlab.errors import SchemaError, StoreError
from benchlab.identity import series_id

SEED002 = Path(__file__).resolve().parents[1] / "data" / "seed002"


def seed_run(root: Path, *, record: dict[str, Any] | None = None) -> Path:
    """The example run of tests/data/seed002/ (manifest, kernel, batch: golden files, copied as
    they are),
    optionally with a record."""
    run_dir = root / "runs" / "by-machine" / "anthony-laptop" / SEED_RUN_ID
    shutil.copytree(SEED002, run_dir, ignore=shutil.ignore_patterns("README.md"))
    if record is not None:
        (run_dir / "record.json").write_text(json.dumps(record), encoding="utf-8")
    return run_dir


def failed_record(**overrides: Any) -> dict[str, Any]:
    record = {
        "$schema": "benchmark/run-record.v1",
        "run_id": SEED_RUN_ID,
        "spec_id": SEED_RUN_ID[: -len("-20250106T120000Z")],
        "machine_id": "anthony-laptop",
        "device": "anthony-laptop",
        "status": "failed",
        "failure_kind": "measurement",
        "error": "model does not fit",
        "tags": ["retry"],
        "timings": {"started_at": "2025-01-06T12:00:05Z"},
        "spec": {
            "spec_id": "s",
            "experiment": "e",
            "device": "anthony-laptop",
            "machine_id": "anthony-laptop",
            "backend": "llama-bench",
            "model": "SmolLM2-135M",
            "precision": "q8",
            "mode": "batch",
        },
    }
    record.update(overrides)
    return record


def test_seed_run_becomes_the_seed_entry(tmp_path: Path) -> None:
    entry = extract_entry(tmp_path, seed_run(tmp_path))
    assert entry.pop("series") == series_id(entry)
    assert entry == {
        "run_id": SEED_RUN_ID,
        "machine_id": "anthony-laptop",
        "timestamp": "2025-01-06T12:00:00Z",
        "model": "SmolLM2-135M",
        "model_id": "smollm2-135m",
        "precision": "q8_0",  # the exact quant type: the manifest's quantization
        "precision_family": "q8",
        "tags": ["batch", "kernel", "smoke"],
        "status": "ok",
        "backend": "llama-bench",  # no modes: `batch` is no part of its identity
        "peak_tok_per_sec": 862.2,
        "baseline_tok_per_sec": 70.6,
        "speedup": 12.21,
        "prefill_tok_per_sec": 1756.0,  # the largest prompt measured, as the test name says
        "tests": ["pp256"],
        "decode_tok_per_sec": 128.2,
        "ttft_ms": 145.785877,  # 256 prompt tokens at 1756 tok/s
        "batch_curve": [
            {"batch": 1, "agg_tok_per_sec": 11.99},
            {"batch": 512, "agg_tok_per_sec": 862.19},
        ],
        "path": f"runs/by-machine/anthony-laptop/{SEED_RUN_ID}/",
    }


def test_record_sets_status_and_tags(tmp_path: Path) -> None:
    run_dir = seed_run(tmp_path, record=failed_record())
    entry = extract_entry(tmp_path, run_dir)
    assert entry["status"] == "failed"
    assert entry["failure_kind"] == "measurement"
    assert entry["tags"] == ["batch", "kernel", "retry", "smoke"]


def test_failed_record_without_results_is_still_a_run(tmp_path: Path) -> None:
    run_dir = seed_run(tmp_path, record=failed_record())
    for name in ("manifest.json", "kernel.json", "batch.json"):
        (run_dir / name).unlink()
    entry = extract_entry(tmp_path, run_dir)
    assert entry["status"] == "failed"
    assert entry["timestamp"] == "2025-01-06T12:00:05Z"
    assert entry["model_id"] == "smollm2-135m"
    assert "peak_tok_per_sec" not in entry


def test_ok_record_without_results_is_refused(tmp_path: Path) -> None:
    run_dir = seed_run(tmp_path, record=failed_record(status="ok", failure_kind=None))
    (run_dir / "batch.json").unlink()
    with pytest.raises(StoreError, match=r"missing batch\.json"):
        extract_entry(tmp_path, run_dir)


def test_files_of_another_run_are_refused(tmp_path: Path) -> None:
    run_dir = seed_run(tmp_path)
    kernel = json.loads((run_dir / "kernel.json").read_text())
    kernel["run_id"] = "someone-else"
    (run_dir / "kernel.json").write_text(json.dumps(kernel))
    with pytest.raises(SchemaError, match=r"kernel.json: \$.run_id: 'someone-else' differs"):
        extract_entry(tmp_path, run_dir)


def test_schema_violation_names_file_and_json_path(tmp_path: Path) -> None:
    run_dir = seed_run(tmp_path)
    batch = json.loads((run_dir / "batch.json").read_text())
    batch["points"][1]["agg_tok_per_sec"] = "fast"
    (run_dir / "batch.json").write_text(json.dumps(batch))
    with pytest.raises(SchemaError, match=r"batch.json: \$.points\[1\].agg_tok_per_sec: "):
        extract_entry(tmp_path, run_dir)


def test_peak_falls_back_to_the_best_point(tmp_path: Path) -> None:
    run_dir = seed_run(tmp_path)
    batch = json.loads((run_dir / "batch.json").read_text())
    del batch["peak"]
    (run_dir / "batch.json").write_text(json.dumps(batch))
    entry = extract_entry(tmp_path, run_dir)
    assert entry["peak_tok_per_sec"] == 862.19
    assert entry["speedup"] == pytest.approx(862.19 / 70.6)


def entry(**overrides: Any) -> dict[str, Any]:
    base = {
        "run_id": "r1",
        "machine_id": "m",
        "timestamp": "2025-01-06T12:00:00Z",
        "model": "M",
        "precision": "q8",
        "status": "ok",
        "tags": [],
    }
    base.update(overrides)
    return base


def test_winner_prefers_ok_over_failed_even_if_older() -> None:
    ok = entry(timestamp="2025-01-01T00:00:00Z")
    failed = entry(status="failed", timestamp="2025-02-01T00:00:00Z")
    assert winner(ok, failed) is ok
    assert winner(failed, ok) is ok


def test_winner_prefers_newer_then_canonical_order() -> None:
    old, new = entry(), entry(timestamp="2025-01-06T13:00:00+01:00")
    assert winner(old, new) == winner(new, old)
    later = entry(timestamp="2025-01-06T12:00:01Z")
    assert winner(old, later) is later and winner(later, old) is later
    low, high = entry(peak_tok_per_sec=1.0), entry(peak_tok_per_sec=2.0)
    assert winner(low, high) is high and winner(high, low) is high


def test_winner_compares_instants_not_strings() -> None:
    utc = entry(timestamp="2025-01-06T12:00:00Z")
    earlier_offset = entry(timestamp="2025-01-06T12:30:00+01:00")  # 11:30 UTC
    assert winner(utc, earlier_offset) is utc
    assert winner(earlier_offset, utc) is utc


@pytest.mark.parametrize(
    ("stamp", "key"),
    [
        ("2025-01-06T12:00:00Z", (1, "2025-01-06T12:00:00.000000Z")),
        ("2025-01-06T13:00:00+01:00", (1, "2025-01-06T12:00:00.000000Z")),
        ("2025-01-06T00:30:00-0130", (1, "2025-01-06T02:00:00.000000Z")),
        ("2025-01-06T12:00:00.5Z", (1, "2025-01-06T12:00:00.500000Z")),
        ("2025-01-06 12:00:00", (1, "2025-01-06T12:00:00.000000Z")),
        ("2025-13-06T12:00:00Z", (0, "2025-13-06T12:00:00Z")),
        ("yesterday", (0, "yesterday")),
    ],
)
def test_time_key_is_the_same_on_every_python(stamp: str, key: tuple[int, str]) -> None:
    assert time_key(stamp) == key


def test_a_model_given_as_a_path_publishes_only_its_file_stem(tmp_path: Path) -> None:
    run_dir = seed_run(tmp_path)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    manifest["model"]["name"] = "/home/alice/models/m.gguf"
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    entry = extract_entry(tmp_path, run_dir)
    assert entry["model"] == entry["model_id"] == "m"
    assert "alice" not in json.dumps(entry)
