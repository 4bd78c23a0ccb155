"""`bench stop`: a clear line and exit 2 when nothing runs; a stop request when it does."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchlab.cli import main
from benchlab.layout import Store
from benchlab.sweep.lock import SweepLock, stop_requested


def test_stop_when_not_running_is_one_line_exit_2(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--store", str(store), "stop", "exp"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("bench: error: ") and "experiment 'exp' is not running" in lines[0]
    assert not (store / "runs" / "sweeps" / "exp" / "stop").exists()


def test_stop_refuses_an_unsafe_experiment_name(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--store", str(store), "stop", "../etc"]) == 2
    assert "unsafe experiment" in capsys.readouterr().err


def test_stop_a_running_sweep(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with SweepLock(Store(store), "exp"):
        assert main(["--store", str(store), "stop", "exp"]) == 0
        assert stop_requested(Store(store), "exp")
    assert "stop requested for exp" in capsys.readouterr().out
