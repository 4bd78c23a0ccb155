"""Declared metrics reach the catalog and every verb (ARCHITECTURE.md, Metrics).

A sweep declares `p99_ms` (ms, lower is better) once, at the top of its config; the command
backend reports it; `bench catalog build` carries it in each entry's `extra_metrics` with
its unit and direction; `bench best --metric p99_ms` gives the smallest, and `bench show`
and `bench compare` print it with its unit. Pulled lines are gated: a declared metric with
a bad name, too many names or a number out of range is set aside by name."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from tests.kit.configs import write_sweep
from tests.sweep.lab import ONE_ATTEMPT

from benchlab.catalog.gate import line_problem
from benchlab.cli import main
from benchlab.layout import Store
from benchlab.query.colcache import MODE_ENV, open_columns

# p99 in ms: 9 - threads, so the t2 point is the best (smallest); decode 10 + threads.
CODE = (
    "import json; t = {threads}; "
    "print(json.dumps(dict(decode=10 + t, lat=dict(p99=9.0 - t), rps=100.0 * t)))"
)


@pytest.fixture
def built(tmp_path: Path, store: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    path = write_sweep(
        tmp_path / "declared.yaml",
        experiment="declared",
        policies=ONE_ATTEMPT,
        metrics={"p99_ms": {"unit": "ms", "better": "lower"}},
        matrix={
            "backend": "command",
            "threads": [1, 2, 3],
            "params": {
                "argv": ["{python}", "-c", CODE],
                "fields": {"decode": "decode", "p99_ms": "lat.p99", "rps": "rps"},
                "metrics": {"rps": {"unit": "requests/s", "better": "higher"}},
            },
        },
    )
    assert main(["run", str(path), "--quiet"]) == 0
    assert main(["catalog", "build"]) == 0
    return store


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> object:
    capsys.readouterr()
    assert main([*argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_entries_carry_declared_metrics_with_unit_and_direction(
    built: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [
        json.loads(line)
        for shard in sorted((built / "catalog").rglob("*.jsonl"))
        for line in shard.read_text().splitlines()
        if line
    ]
    assert len(lines) == 3
    extra = {e["threads"]: e["extra_metrics"] for e in lines}
    assert extra[2]["p99_ms"] == {"value": 7.0, "unit": "ms", "better": "lower"}
    assert extra[3]["rps"] == {"value": 300.0, "unit": "requests/s", "better": "higher"}
    assert all("p99_ms" not in e for e in lines)  # stored under extra_metrics only
    assert all("metrics" not in (e.get("axes") or {}) for e in lines)  # not an axis


@pytest.mark.parametrize("mode", ["never", "always"])
def test_best_ranks_a_declared_metric_in_its_declared_direction(
    built: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    monkeypatch.setenv(MODE_ENV, mode)  # the loaded catalog, then the columnar cache
    [low] = _json(capsys, "best", "--metric", "p99_ms", "--ever")
    assert (low["threads"], low["p99_ms"]) == (3, 6.0)  # lower is better: the smallest
    [high] = _json(capsys, "best", "--metric", "rps", "--ever")
    assert (high["threads"], high["rps"]) == (3, 300.0)
    [level] = _json(capsys, "best", "--metric", "p99_ms")  # the best current level
    assert (level["threads"], level["p99_ms"]) == (3, 6.0)
    if mode == "always":
        columns = open_columns(Store(built))
        assert columns is not None and columns.has_column("p99_ms")  # stored there
        assert columns.declared["p99_ms"] == ["ms", "lower"]
    capsys.readouterr()
    assert main(["best", "--metric", "p98_ms"]) == 2
    err = capsys.readouterr().err
    assert "--metric: unknown metric 'p98_ms'" in err and "p99_ms" in err  # listed as valid


def test_list_show_and_compare_print_it_with_its_unit(
    built: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = _json(capsys, "list")
    assert sorted(r["p99_ms"] for r in runs) == [6.0, 7.0, 8.0]
    run_id = next(r["run_id"] for r in runs if r["threads"] == 1)
    capsys.readouterr()
    assert main(["list"]) == 0
    header, _, *lines = capsys.readouterr().out.splitlines()
    assert "p99_ms (ms)" in header and "rps (requests/s)" in header
    assert sorted(line.split()[-2] for line in lines) == ["6.00", "7.00", "8.00"]
    assert main(["show", run_id]) == 0
    out = capsys.readouterr().out
    assert "p99_ms" in out and "8.00 ms" in out
    other = next(r["run_id"] for r in runs if r["threads"] == 2)
    compared = _json(capsys, "compare", "--run-id", run_id, "--run-id", other)
    rows = {m["metric"]: m for m in compared["metrics"]}
    assert rows["p99_ms"]["unit"] == "ms"
    assert rows["p99_ms"]["verdicts"] == ["same", "better"]  # 7 ms after 8 ms: better


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"P99": {"value": 1.0, "unit": "ms", "better": "lower"}}, "not a declared metric name"),
        ({"threads": {"value": 1.0, "unit": "ms", "better": "lower"}}, "not a declared metric"),
        ({"ttft_ms": {"value": 1.0, "unit": "ms", "better": "lower"}}, "not a declared metric"),
        ({"p99_ms": {"value": 1e13, "unit": "ms", "better": "lower"}}, "out of range"),
        ({"p99_ms": {"value": "7", "unit": "ms", "better": "lower"}}, "expected a number"),
        ({"p99_ms": {"value": 7.0, "unit": "ms", "better": "up"}}, "higher or lower"),
        ({"p99_ms": {"value": 7.0, "unit": "m\u202es", "better": "lower"}}, "p99_ms.unit"),
        ({"p99_ms": {"value": 7.0, "unit": "ms"}}, "expected {value, unit, better}"),
        ({f"m{i}": {"value": 1, "unit": "ms", "better": "lower"} for i in range(17)}, "at most"),
    ],
)
def test_the_gate_refuses_a_bad_declared_metric_by_name(extra: dict, message: str) -> None:
    entry = {
        "run_id": "r1",
        "machine_id": "m",
        "timestamp": "2026-01-01T00:00:00Z",
        "model": "tiny",
        "precision": "f32",
        "extra_metrics": extra,
    }
    problem = line_problem(entry)
    assert problem is not None and problem.startswith("extra_metrics: ")
    assert message in problem
    good = {"p99_ms": {"value": 7.0, "unit": "ms", "better": "lower"}}
    assert line_problem({**entry, "extra_metrics": good}) is None


def _history(store: Path, factor: float) -> None:
    """One series of 40 runs whose declared p99_ms (lower is better) moves by `factor` at
    run 20, written as pulled shard lines (tests.kit.catalog)."""
    from tests.kit.catalog import write_v3_catalog

    rng = np.random.default_rng(11)
    runs = []
    for i in range(40):
        value = 10.0 * (factor if i >= 20 else 1.0) * (1 + rng.normal(0, 0.02))
        stamp = f"2026-01-{1 + i // 24:02d}T{i % 24:02d}:00:00Z"
        runs.append(
            {
                "run_id": f"pi5-srv-f32-batch-abcd1234-{stamp.replace('-', '').replace(':', '')}",
                "machine_id": "pi5",
                "timestamp": stamp,
                "model": "srv",
                "model_id": "srv",
                "precision": "f32",
                "backend": "command",
                "status": "ok",
                "tags": [],
                "extra_metrics": {"p99_ms": {"value": value, "unit": "ms", "better": "lower"}},
            }
        )
    write_v3_catalog(store, runs)


@pytest.mark.parametrize(("factor", "kind", "code"), [(1.3, "regression", 1), (0.7, None, 0)])
def test_the_detector_reads_the_declared_direction(
    store: Path, capsys: pytest.CaptureFixture[str], factor: float, kind: str | None, code: int
) -> None:
    """p99 rising 30% is a regression (lower is better); falling 30% is none."""
    _history(store, factor)
    argv = ["--store", str(store), "regression", "--detect", "--metric", "p99_ms"]
    assert main([*argv, "--format", "json"]) == code
    steps = json.loads(capsys.readouterr().out)
    assert len(steps) == 1 and 25 < abs(steps[0]["change"]) < 35
    assert (steps[0]["kind"] == "regression") == (kind == "regression")


def test_a_bad_declaration_in_a_config_is_one_line_naming_the_field(
    tmp_path: Path, store: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    path = write_sweep(
        tmp_path / "bad.yaml",
        experiment="bad",
        metrics={"p99_ms": {"unit": "ms", "better": "sideways"}},
        matrix={"backend": "command", "params": {"argv": ["x"], "fields": {"decode": "d"}}},
    )
    assert main(["run", str(path), "--dry-run"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "metrics.p99_ms.better: expected higher or lower" in err[0]
    assert not (store / "runs").exists()  # nothing written


def _gate_of(store: Path) -> dict[int, dict]:  # type: ignore[type-arg]
    """Each entry's gate verdict by its p99, read from the built shards."""
    lines = [
        json.loads(line)
        for shard in sorted((store / "catalog").rglob("*.jsonl"))
        for line in shard.read_text().splitlines()
        if line
    ]
    return {int(e["extra_metrics"]["p99_ms"]["value"]): e for e in lines}


@pytest.mark.parametrize(
    ("gates", "expect"),
    [
        # A latency that more than doubled is a 0.45x speedup: it fails `min_speedup: 0.9` in
        # the direction the config declares (as a ratio, 11 / 5 = 2.2 would have passed).
        (
            [{"name": "p99", "metric": "p99_ms", "min_speedup": 0.9, "baseline": "previous"}],
            {5: "passed", 11: "failed", 4: "passed"},
        ),
        # No gate declared: the default gate judges the first metric the run has, here the
        # declared one, instead of "unknown" for a run with no batched peak.
        ([], {5: "passed", 11: "failed", 4: "passed"}),
    ],
)
def test_gates_judge_a_declared_metric_in_its_declared_direction(
    tmp_path: Path,
    store: Path,
    monkeypatch: pytest.MonkeyPatch,
    gates: list,
    expect: dict,  # type: ignore[type-arg]
) -> None:
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    value = tmp_path / "p99.txt"
    code = f"print('{{\"p99\": %s}}' % open({str(value)!r}).read())"
    path = write_sweep(
        tmp_path / "gated.yaml",
        experiment="gated",
        policies=ONE_ATTEMPT,
        metrics={"p99_ms": {"unit": "ms", "better": "lower"}},
        gates=gates,
        matrix={
            "backend": "command",
            "params": {
                "argv": ["{python}", "-c", code],
                "fields": {"p99_ms": "p99"},
            },
        },
    )
    for p99 in (5, 11, 4):  # the default gate fails below half the previous run's speed
        value.write_text(f"{p99}\n")
        assert main(["run", str(path), "--fresh", "--quiet"]) == 0
    assert main(["catalog", "build"]) == 0
    entries = _gate_of(store)
    assert {p99: e["gate"] for p99, e in entries.items()} == expect, entries
