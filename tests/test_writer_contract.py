"""The writer contract (ARCHITECTURE.md, The catalog: one writer contract): what any verb
writes passes the gate every reader applies, or is refused where it enters, in one line
naming the file or flag and the field.

Each case is one a user hit: the verb ran and exited 0, then every reader set the line aside
and `validate` and `build --full` exited 2 until someone deleted the line by hand. Real
stores, real configs and the real CLI; nothing is mocked.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.kit.configs import write_sweep
from tests.kit.runs import write_run

from benchlab.cli import main

# --- helpers ------------------------------------------------------------------------------


def one_line_error(err: str, *needles: str) -> str:
    """The one `bench: error:` line a refusal prints, holding every needle."""
    assert err.startswith("bench: error: "), err
    assert err.count("\n") == 1, err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err, err
    return err


def files_under(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


# --- the sweep config ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "field", "reason"),
    [
        ({"n": 2**53 + 1}, "matrix.params.n", "outside +-2**53"),
        ({"n": -(2**53) - 1}, "matrix.params.n", "outside +-2**53"),
        ({"x": 1e300}, "matrix.params.x", "outside +-2**53"),
        ({"xs": list(range(5000))}, "matrix.params.xs", "5000 items (at most 1024)"),
        ({"s": "a" * 2000}, "matrix.params.s", "2000 characters"),
    ],
    ids=["2**53+1", "-2**53-1", "1e300", "5000-items", "long-text"],
)
def test_a_param_no_reader_accepts_is_refused_when_the_config_is_read(
    store: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    params: dict[str, Any],
    field: str,
    reason: str,
) -> None:
    config = write_sweep(tmp_path / "lab.yaml", matrix={"params": params})
    before = files_under(store)
    assert main(["--store", str(store), "run", str(config)]) == 2
    one_line_error(capsys.readouterr().err, f"{config}: {field}", reason)
    assert files_under(store) == before


def test_a_thread_count_past_the_readers_range_is_refused(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_sweep(tmp_path / "lab.yaml", matrix={"threads": 10**17})
    assert main(["--store", str(store), "run", str(config), "--dry-run"]) == 2
    one_line_error(capsys.readouterr().err, f"{config}: matrix.threads", "+-2**53")


@pytest.mark.parametrize("name", ["status", "run_id", "tags", "model", "series"])
def test_a_declared_metric_may_not_take_an_entry_fields_name(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    config = write_sweep(tmp_path / "lab.yaml", metrics={name: {"unit": "ms", "better": "lower"}})
    assert main(["--store", str(store), "run", str(config), "--dry-run"]) == 2
    one_line_error(capsys.readouterr().err, f"{config}: metrics.{name}", "reserves")


def test_a_gate_on_a_misspelt_metric_is_refused_with_the_known_names(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_sweep(
        tmp_path / "lab.yaml",
        metrics={"p99_ms": {"unit": "ms", "better": "lower"}},
        gates=[{"metric": "decod_tok_per_sec", "min": 1}],
    )
    assert main(["--store", str(store), "run", str(config), "--dry-run"]) == 2
    err = one_line_error(
        capsys.readouterr().err, f"{config}: gates[0].metric", "'decod_tok_per_sec'"
    )
    assert "decode_tok_per_sec" in err and "p99_ms" in err  # the known names, declared too


def test_a_gate_on_a_declared_metric_still_loads(tmp_path: Path) -> None:
    from benchlab.sweep.config import load_sweep_config

    config = write_sweep(
        tmp_path / "lab.yaml",
        metrics={"p99_ms": {"unit": "ms", "better": "lower"}},
        gates=[{"metric": "p99_ms", "max": 50}, {"metric": "decode_tok_per_sec", "min": 1}],
    )
    assert [g.metric for g in load_sweep_config(config).gates] == ["p99_ms", "decode_tok_per_sec"]


# --- the catalog build --------------------------------------------------------------------


def test_the_build_never_writes_a_line_its_readers_refuse(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run dir an older version recorded with a value out of the readers' range (a fake
    nvidia-smi's 1e20 MiB) is set aside by the build, named, not published and then set
    aside by every reader: `validate` stays clean."""
    run_dir = write_run(store)
    record = json.loads((run_dir / "record.json").read_text())
    record["metrics"]["gpu_mem_peak_mb"] = 1e20
    (run_dir / "record.json").write_text(json.dumps(record))
    assert main(["--store", str(store), "catalog", "build"]) == 2
    err = capsys.readouterr().err
    assert str(run_dir) in err and "gpu_mem_peak_mb" in err and "Traceback" not in err
    assert main(["--store", str(store), "catalog", "validate"]) == 0
    assert "set aside" not in capsys.readouterr().err


# --- importers ----------------------------------------------------------------------------

LLAMA = Path(__file__).parent / "data" / "llama_bench" / "b5163-cuda-2025-04.json"


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"avg_ts": 1e300, "samples_ts": [1e300]}, "out of range"),
        ({"n_threads": -4}, "threads: -4 is below zero"),
    ],
    ids=["1e300", "negative-threads"],
)
def test_a_llama_bench_value_no_reader_accepts_is_refused_at_the_import(
    store: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    change: dict[str, Any],
    needle: str,
) -> None:
    rows = json.loads(LLAMA.read_text())
    for row in rows:
        row.update(change)
    source = tmp_path / "bench.json"
    source.write_text(json.dumps(rows))
    before = files_under(store)
    assert main(["--store", str(store), "migrate", str(source), "--machine-id", "box"]) == 2
    one_line_error(capsys.readouterr().err, str(source), needle)
    assert files_under(store) == before  # nothing of the file half-imported


def asv_dir(tmp_path: Path, result: dict[str, Any]) -> Path:
    """An asv results dir of one machine and one result file."""
    root = tmp_path / "asv"
    (root / "box").mkdir(parents=True)
    (root / "box" / "machine.json").write_text(json.dumps({"machine": "box", "version": 1}))
    body = {"commit_hash": "3f4f2691" * 5, "date": 1767528000000, "env_name": "py", **result}
    (root / "box" / "3f4f2691-py.json").write_text(json.dumps(body))
    return root


def test_an_asv_grid_is_counted_before_it_is_expanded(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Six parameters of 100 values each: 3.8 KB of JSON, 10**12 combinations (MemoryError
    at 2.4 GB before)."""
    params = [[str(i) for i in range(100)] for _ in range(6)]
    root = asv_dir(tmp_path, {"results": {"bench.time_x": {"result": None, "params": params}}})
    assert (root / "box" / "3f4f2691-py.json").stat().st_size < 8000
    assert main(["--store", str(store), "migrate", str(root)]) == 2
    one_line_error(
        capsys.readouterr().err, "params: 1,000,000,000,000 parameter combinations", "cap"
    )


@pytest.mark.parametrize("date", [1e20, -5, 4_200_000_000_000])
def test_an_asv_date_out_of_range_is_one_line(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], date: float
) -> None:
    root = asv_dir(tmp_path, {"date": date, "results": {"bench.time_x": {"result": [1.0]}}})
    assert main(["--store", str(store), "migrate", str(root)]) == 2
    one_line_error(capsys.readouterr().err, "$.date", "1970 to 2100")


def test_an_asv_value_no_reader_accepts_is_refused_at_the_import(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = asv_dir(tmp_path, {"results": {"bench.time_x": {"result": [1e300]}}})
    before = files_under(store)
    assert main(["--store", str(store), "migrate", str(root)]) == 2
    one_line_error(capsys.readouterr().err, "3f4f2691-py.json", "1e+300 is out of range")
    assert files_under(store) == before


# --- bench inject -------------------------------------------------------------------------


def test_inject_refuses_a_thread_count_no_reader_accepts(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_sweep(tmp_path / "lab.yaml")
    argv = ["--store", str(store), "inject", str(config), f"threads={10**26}"]
    assert main(argv) == 2
    one_line_error(capsys.readouterr().err, f"{config} with threads=", "matrix.threads")
    assert not list(store.rglob("pending.jsonl"))


def test_inject_counts_its_matrix_before_expanding_it(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: 200 x 200 x 200 points were expanded (45 s, 1.8 GB for a larger one) with no
    cap at all."""
    config = write_sweep(tmp_path / "lab.yaml")
    axes = [f"{a}={list(range(1, 201))}" for a in ("threads", "prompt_tokens", "gen_tokens")]
    assert main(["--store", str(store), "inject", str(config), *axes]) == 2
    one_line_error(capsys.readouterr().err, "expands to 8,000,000 points", "--max-points")
    small = ["threads=[1, 2]", "prompt_tokens=[8, 16]"]
    assert main(["--store", str(store), "inject", str(config), *small, "--max-points", "3"]) == 2
    capsys.readouterr()
    assert main(["--store", str(store), "inject", str(config), *small, "--max-points", "4"]) == 0
    assert "injected 4 point(s)" in capsys.readouterr().out


# --- values a device reports --------------------------------------------------------------


def fake_nvidia_smi(tmp_path: Path, line: str) -> str:
    """A PATH whose nvidia-smi prints `line` for every query (the telemetry and sysinfo)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "nvidia-smi"
    tool.write_text(f"#!/bin/sh\necho '{line}'\n")
    tool.chmod(0o755)
    import os

    return f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"


@pytest.mark.parametrize(
    ("line", "shown"), [("100.0, 50, 1e20", "'1e20'"), ("nan, nan, nan", "'nan'")]
)
def test_a_reading_that_is_none_is_not_measured_and_the_run_proceeds(
    store: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    line: str,
    shown: str,
) -> None:
    """Before: 1e20 MiB was recorded, built and then set aside by every reader; `nan` ended
    `bench run` in a pydantic error."""
    monkeypatch.setenv("PATH", fake_nvidia_smi(tmp_path, line))
    config = write_sweep(tmp_path / "lab.yaml")
    assert main(["--store", str(store), "run", str(config), "--quiet"]) == 0
    (record_path,) = store.rglob("record.json")
    record = json.loads(record_path.read_text())
    assert record["status"] == "ok"
    assert "gpu_mem_peak_mb" not in record["metrics"]
    assert any("gpu_mem_mb" in w and shown in w and "not measured" in w for w in record["warnings"])
    assert main(["--store", str(store), "catalog", "build"]) == 0
    assert main(["--store", str(store), "catalog", "validate"]) == 0
    assert "Traceback" not in capsys.readouterr().err


def test_a_resident_set_of_zero_is_not_measured() -> None:
    """Before: two of six short runs recorded peak_rss_mb 0.0 (shown "0.00 MiB")."""
    from benchlab.agent.runner import peak_rss_mb
    from benchlab.metrics import resource_metrics

    assert peak_rss_mb(None, 0.0) == (None, None)
    warnings: list[str] = []
    assert resource_metrics({"peak_rss_mb": 0.0}, 1.0, 10.0, warnings) == {}
    assert warnings == ["peak_rss_mb: the device reported 0; not measured"]
    assert resource_metrics({"peak_rss_mb": 12.5}, 1.0, 10.0) == {"peak_rss_mb": 12.5}


def test_the_metric_bound_is_the_gates() -> None:
    from benchlab.catalog.gate import MAX_METRIC
    from benchlab.metrics import MAX_MEASURED

    assert MAX_MEASURED == MAX_METRIC


def test_show_of_a_run_recorded_under_a_nan_load_average(
    store: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = tmp_path / "machine"
    (root / "proc").mkdir(parents=True)
    (root / "proc" / "loadavg").write_text("nan nan nan 1/100 1\n")
    (root / "proc" / "meminfo").write_text("SwapTotal: 0 kB\nSwapFree: 0 kB\n")
    monkeypatch.setenv("BENCHLAB_SYSFS_ROOT", str(root))
    config = write_sweep(tmp_path / "lab.yaml")
    assert main(["--store", str(store), "run", str(config), "--quiet"]) == 0
    (record_path,) = store.rglob("record.json")
    capsys.readouterr()
    assert main(["--store", str(store), "show", record_path.parent.name]) == 0
    out, err = capsys.readouterr()
    assert "Traceback" not in err and record_path.parent.name in out


@pytest.mark.parametrize(
    "change",
    [{"command": ["kubectl", "exec", "-i", "pod-b", "--"]}, {"python": "/opt/py3.12/bin/python3"}],
    ids=["command", "python"],
)
def test_an_exec_devices_prefix_and_interpreter_are_in_the_spec_id(
    tmp_path: Path, change: dict[str, Any]
) -> None:
    from benchlab.sweep.config import load_sweep_config
    from benchlab.sweep.expand import expand

    device = {"transport": "exec", "command": ["kubectl", "exec", "-i", "pod-a", "--"]}
    before = write_sweep(tmp_path / "a.yaml", devices={"k8s": device})
    after = write_sweep(tmp_path / "b.yaml", devices={"k8s": {**device, **change}})
    one = expand(load_sweep_config(before))[0]
    two = expand(load_sweep_config(after))[0]
    assert one.spec_id != two.spec_id  # the point is not counted as done under the old one


# --- the run record -----------------------------------------------------------------------


def test_a_run_whose_line_no_reader_accepts_is_recorded_as_a_failed_parse_run(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A command benchmark that reports a decode rate of 1e300: before, an ok run every
    build and reader then set aside."""
    from tests.sweep.lab import ONE_ATTEMPT, command_params

    code = "import json; print(json.dumps(dict(decode=1e300)))"
    config = write_sweep(
        tmp_path / "lab.yaml",
        policies=ONE_ATTEMPT,
        matrix={"backend": "command", "params": command_params(code)},
    )
    main(["--store", str(store), "run", str(config), "--quiet"])
    (record_path,) = store.rglob("record.json")
    record = json.loads(record_path.read_text())
    assert (record["status"], record["failure_kind"]) == ("failed", "parse")
    assert "would be refused by every reader" in record["error"]
    assert "tok_per_sec: 1e+300 is out of range" in record["error"]
    capsys.readouterr()
    main(["--store", str(store), "catalog", "build"])
    assert main(["--store", str(store), "catalog", "validate"]) == 0
    assert "set aside" not in capsys.readouterr().err
