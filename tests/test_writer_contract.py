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
