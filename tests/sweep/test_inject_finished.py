"""Injected points are never dropped in silence: the next `bench run` of a sweep that had
finished runs them, sequential or --concurrent, and one no session can run is refused in
a line that says why and which command would run it (real `bench run`, command backend)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.kit.configs import write_sweep
from tests.sweep.lab import ONE_ATTEMPT, command_params

from benchlab.cli import main

OK = "import json; print(json.dumps(dict(decode=10)))"
MODES = [pytest.param([], id="sequential"), pytest.param(["--concurrent"], id="concurrent")]


def _write(path: Path, devices: dict[str, Any], device: Any = "local") -> Path:
    return write_sweep(
        path,
        experiment="inj",
        devices=devices,
        policies=ONE_ATTEMPT,
        matrix={
            "device": device,
            "threads": 1,
            "backend": "command",
            "params": command_params(OK),
        },
    )


def _threads(store: Path) -> list[tuple[str, int]]:
    found = [
        json.loads(p.read_text())
        for p in sorted((store / "runs" / "by-machine").glob("*/*/record.json"))
    ]
    return sorted((r["device"], r["spec"]["threads"]) for r in found if r["status"] == "ok")


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
def test_a_finished_sweep_runs_its_injected_points(
    tmp_path: Path, store: Path, monkeypatch: pytest.MonkeyPatch, capsys, mode: list[str]
) -> None:
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    path = _write(tmp_path / "inj.yaml", {"local": {"transport": "local"}})
    assert main(["run", str(path), *mode]) == 0
    assert main(["inject", str(path), "threads=2"]) == 0
    capsys.readouterr()
    assert main(["run", str(path), *mode]) == 0
    out = capsys.readouterr().out
    assert "INJECT" in out and "queued next on local" in out
    assert "1 of 1 point(s) already done, 0 to run and 1 injected" in out
    assert _threads(store) == [("local", 1), ("local", 2)]
    assert main(["run", str(path), *mode]) == 0  # done now: skipped, not run twice
    assert "INJECT" not in capsys.readouterr().out
    assert _threads(store) == [("local", 1), ("local", 2)]


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
def test_an_injected_point_no_session_can_run_is_refused_loudly(
    tmp_path: Path, store: Path, monkeypatch: pytest.MonkeyPatch, capsys, mode: list[str]
) -> None:
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    both = {"local": {"transport": "local"}, "pi5": {"transport": "local"}}
    path = _write(tmp_path / "inj.yaml", both, device=["local", "pi5"])
    assert main(["run", str(path), *mode]) == 0
    assert main(["inject", str(path), "device=pi5", "threads=2"]) == 0
    pending = (store / "runs/sweeps/inj/pending.jsonl").read_text()
    _write(path, {"local": {"transport": "local"}})  # pi5 leaves the config
    capsys.readouterr()
    assert main(["run", str(path), *mode]) == 0
    out = capsys.readouterr().out
    (line,) = [x for x in out.splitlines() if x.startswith("INJECT")]
    assert "not run: device 'pi5' is not in the config" in line
    assert f"run it with `bench run {path}{' --concurrent' if mode else ''}`" in line
    assert (store / "runs/sweeps/inj/pending.jsonl").read_text() == pending  # kept, whole
    assert _threads(store) == [("local", 1), ("pi5", 1)]
