"""`bench regression` end to end over a catalog.json, with CI-gate exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from tests.kit.catalog import write_v3_catalog

from benchlab.cli import main


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
    write_v3_catalog(store, runs)
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
    assert "laptop" in out and "median of 39 run(s) of the last stable segment" in out


def test_the_baseline_is_the_last_stable_segment_not_the_slow_recent_runs(
    catalog: Path, capsys: pytest.CaptureFixture
) -> None:
    """pi5 dropped 25 % twenty runs ago: the median of the last 5 runs (already slow) said
    "no"; the segment before the step says "yes"."""
    args = ["--store", str(catalog), "regression", "--machine", "pi5", "--format", "json"]
    assert main(args) == 1
    [row] = json.loads(capsys.readouterr().out)
    assert row["baseline"] == "median of 20 run(s) of the last stable segment"
    assert row["baseline_value"] == pytest.approx(100, rel=0.03)
    assert row["regression"] is True and -30 < row["change"] < -20


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


def test_threshold_5_is_refused_and_5_percent_equals_0_05(
    catalog: Path, capsys: pytest.CaptureFixture
) -> None:
    baseline = _entry(0, "pi5", 0)["run_id"]
    args = ["--store", str(catalog), "regression", "--machine", "pi5", "--baseline", baseline]
    args += ["--format", "json"]
    assert main([*args, "--threshold", "5"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "--threshold: '5' is ambiguous: write 5% for 5 percent or 0.05 as a fraction" in err
    assert main([*args, "--threshold", "5%"]) == 1
    percent = capsys.readouterr().out
    assert main([*args, "--threshold", "0.05"]) == 1
    assert capsys.readouterr().out == percent


def _sweep_entry(sweep: int, model: str, precision: str, threads: int, value: float) -> dict:
    stamp = f"2026-02-0{1 + sweep}T00:{threads:02d}:00Z"
    return {
        "run_id": f"local-{model}-{precision}-t{threads}-2026020{1 + sweep}T00{threads:02d}00Z",
        "machine_id": "local",
        "timestamp": stamp,
        "model": model,
        "model_id": model,
        "precision": precision,
        "backend": "reference",
        "backend_version": "benchlab 0.1.0",
        "mode": "batch",
        "threads": threads,
        "prompt_tokens": 32,
        "gen_tokens": 16,
        "status": "ok",
        "tags": [],
        "peak_tok_per_sec": value,
    }


def test_the_default_local_sweep_twice_is_not_a_regression(
    store: Path, capsys: pytest.CaptureFixture
) -> None:
    """threads 1 and 2, two models, two precisions, swept twice: a t2 run is ~30 % faster
    than a t1 run, so comparing across threads (one series per machine, model and
    precision) was a false alarm that failed the project's own default run."""
    runs = [
        _sweep_entry(sweep, model, precision, threads, base * threads * (1 + 0.01 * sweep))
        for sweep in (0, 1)
        for model, base in (("smollm2-135m", 100.0), ("tinyllama", 40.0))
        for precision in ("f32", "q8")
        for threads in (1, 2)
    ]
    write_v3_catalog(store, runs)
    args = ["--store", str(store), "regression", "--machine", "local", "--format", "json"]
    assert main(args) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 8 and not any(row["regression"] for row in rows)
    assert {row["threads"] for row in rows} == {1, 2}
    assert all(" t1 " in row["label"] or " t2 " in row["label"] for row in rows)


def test_ci_gate_writes_a_markdown_summary_and_fails_over_the_threshold(
    catalog: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")  # $GITHUB_STEP_SUMMARY is appended to, never replaced
    base = ["--store", str(catalog), "regression", "--detect", "--summary-md", str(summary)]
    assert main([*base, "--fail-over", "10%"]) == 1
    text = summary.read_text()
    assert text.startswith("earlier step\n### Benchmark regressions (every metric)")
    assert "**FAIL**: 1 confirmed regression(s) of 10 % or more" in text
    assert "| regression ❌ | -2" in text and "pi5 smollm2-135m q8 reference" in text
    # A bigger threshold passes the same step; the summary still lists it.
    assert main([*base, "--fail-over", "30%"]) == 0
    assert "**PASS**: no confirmed regression of 30 % or more" in summary.read_text()


def test_ci_gate_window_counts_back_from_the_newest_run(
    catalog: Path, capsys: pytest.CaptureFixture
) -> None:
    """The step is at run 20 of 40 (hourly): 20 hours before the newest run."""
    base = ["--store", str(catalog), "regression", "--detect", "--format", "json"]
    assert main([*base, "--window", "0.5"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    assert main([*base, "--window", "1"]) == 1
    [step] = json.loads(capsys.readouterr().out)
    assert step["status"] == "confirmed" and step["runs_after"] == 20


def test_a_window_past_the_calendar_is_one_line(
    catalog: Path, capsys: pytest.CaptureFixture
) -> None:
    """2**31 days used to end in an OverflowError traceback from date arithmetic."""
    base = ["--store", str(catalog), "regression", "--detect"]
    assert main([*base, "--window", "2147483648"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "at most 100000" in err
    assert main([*base, "--window", "100000", "--format", "json"]) == 1  # every run counts
    from benchlab.detect.regress import window_start

    assert window_start([{"timestamp": "2025-01-06T00:00:00Z"}], 1e6) is None


def test_with_no_metric_a_series_without_a_peak_is_judged_by_its_decode(
    store: Path, capsys: pytest.CaptureFixture
) -> None:
    """A llama-bench series measures no batched peak: with no --metric, the CI gate and
    --machine judge it by decode (each series' headline), not pass it by in silence."""
    rng = np.random.default_rng(11)
    runs = []
    for i in range(40):
        run = _entry(i, "gpu", 0.0)
        del run["peak_tok_per_sec"]
        run.update(backend="llama-bench", run_id=run["run_id"].replace("batch", "llama"))
        run["decode_tok_per_sec"] = 80 * (0.7 if i >= 30 else 1.0) * (1 + rng.normal(0, 0.02))
        runs.append(run)
    runs += [_entry(i, "pi5", 50 * (1 + rng.normal(0, 0.02))) for i in range(40)]
    write_v3_catalog(store, sorted(runs, key=lambda e: e["run_id"]))
    base = ["--store", str(store), "regression", "--format", "json"]
    assert main([*base, "--detect"]) == 1
    [step] = json.loads(capsys.readouterr().out)
    assert (step["machine_id"], step["metric"]) == ("gpu", "decode_tok_per_sec")
    assert step["first_bad_run"].endswith("T060000Z") and -35 < step["change"] < -25
    assert main([*base, "--detect", "--metric", "peak_tok_per_sec"]) == 0  # asked: peak only
    assert json.loads(capsys.readouterr().out) == []
    assert main([*base, "--machine", "gpu"]) == 1
    [row] = json.loads(capsys.readouterr().out)
    assert row["metric"] == "decode_tok_per_sec" and row["regression"]
    # `bench best` with no --metric: no batched peak on gpu, so decode, and a note says so.
    assert main(["--store", str(store), "best", "--machine", "gpu", "--format", "json"]) == 0
    captured = capsys.readouterr()
    [best] = json.loads(captured.out)
    assert best["level"]["metric"] == "decode_tok_per_sec" and best["machine_id"] == "gpu"
    assert "ranked by decode_tok_per_sec" in captured.err
    args = ["--store", str(store), "best", "--machine", "gpu", "--metric", "peak_tok_per_sec"]
    assert main(args) == 1  # asked for peak: no match, exit 1


def test_an_asv_time_metric_is_judged_without_metric(
    store: Path, capsys: pytest.CaptureFixture
) -> None:
    """An imported asv history carries only `time_s` (lower is better): with no --metric,
    every metric a series carries is its own history, so its slowdown is found and gated."""
    rng = np.random.default_rng(5)
    runs = []
    for i in range(30):
        run = _entry(i, "asvbox", 0.0)
        del run["peak_tok_per_sec"]
        run.update(backend="asv", mode="time", run_id=run["run_id"].replace("batch", "asv"))
        run["time_s"] = 0.020 * (1.3 if i >= 18 else 1.0) * (1 + rng.normal(0, 0.01))
        runs.append(run)
    write_v3_catalog(store, runs)
    base = ["--store", str(store), "regression", "--format", "json"]
    assert main([*base, "--detect"]) == 1
    [step] = json.loads(capsys.readouterr().out)
    assert (step["metric"], step["kind"], step["open"]) == ("time_s", "regression", True)
    assert step["first_bad_run"].endswith("T180000Z") and 25 < step["change"] < 35
    assert main([*base, "--machine", "asvbox"]) == 1
    [row] = json.loads(capsys.readouterr().out)
    assert row["metric"] == "time_s" and row["regression"]
