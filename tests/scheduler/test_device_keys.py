"""A device is (machine, device): the default name `local` on two machines is two devices,
in `bench devices report`, in the lasting history and in the scheduler's fitness seed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.kit.configs import parse_sweep, write_sweep
from tests.kit.scheduler import bare_sweep
from tests.sweep.lab import ONE_ATTEMPT, command_params

from benchlab.cli import main
from benchlab.layout import Store
from benchlab.sweep.history import DeviceHistory

OK = "import json; print(json.dumps(dict(decode=10)))"
FAIL = "import sys; sys.exit(3)"


def _sweep_file(tmp_path: Path, experiment: str, devices: dict[str, Any], **matrix: Any) -> Path:
    return write_sweep(
        tmp_path / f"{experiment}.yaml",
        experiment=experiment,
        devices=devices,
        policies=ONE_ATTEMPT,
        matrix={"backend": "command", "params": command_params(OK), **matrix},
    )


@pytest.mark.slow
def test_local_on_two_machines_is_two_rows(
    tmp_path: Path, store: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    on_a = _sweep_file(
        tmp_path,
        "on-a",
        {
            "local": {"transport": "local", "machine_id": "A"},
            "gpu": {"transport": "local", "machine_id": "A"},
        },
        device=["local", "gpu"],
        threads=[1, 2],
    )
    on_b = _sweep_file(
        tmp_path,
        "on-b",
        {"local": {"transport": "local", "machine_id": "B"}},
        threads=[1, 2, 3, 4, 5, 6],
    )
    assert main(["run", str(on_a), "--concurrent"]) == 0  # machines from schedule.json
    assert main(["run", str(on_b)]) == 0  # sequential: machines from the records
    capsys.readouterr()
    assert main(["devices", "report", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["devices"]
    by_key = {(r["machine_id"], r["device"]): r for r in rows}
    assert sorted(by_key) == [("A", "gpu"), ("A", "local"), ("B", "local")]
    assert by_key[("A", "local")]["ok"] == 2 and by_key[("A", "local")]["history"] == 2
    assert by_key[("A", "gpu")]["ok"] == 2 and by_key[("A", "gpu")]["history"] == 2
    assert by_key[("B", "local")]["ok"] == 6 and by_key[("B", "local")]["history"] == 6
    assert all(r["experiments"] == 1 for r in rows)
    lines = (store / "runs/devices/A/history.jsonl").read_text().splitlines()
    assert {(json.loads(x)["machine"], json.loads(x)["device"]) for x in lines} == {
        ("A", "local"),
        ("A", "gpu"),
    }
    schedule = json.loads((store / "runs/sweeps/on-a/schedule.json").read_text())
    assert schedule["devices"]["local"]["machine_id"] == "A"
    assert {a["machine_id"] for a in schedule["assignments"]} == {"A"}
    assert main(["devices", "report"]) == 0  # the table: a row per (machine, device)
    table = capsys.readouterr().out
    assert table.count(" local ") == 2


def test_fitness_is_seeded_from_the_device_own_lines(store: Path) -> None:
    """Two devices on one machine: the one that failed yesterday starts unfit, the other
    fit (one machine's history is not one device's)."""
    history = DeviceHistory(Store(store), "yesterday")
    for _ in range(5):
        history.record("m", "bad", "failed", None)
    history.flush()
    config = parse_sweep(
        experiment="seed",
        devices={
            "good": {"transport": "local", "machine_id": "m"},
            "bad": {"transport": "local", "machine_id": "m"},
        },
        matrix={"device": ["good", "bad"], "backend": "reference"},
    )
    sweep = bare_sweep(store, config, lambda: 0.0)
    assert sweep.fitness.fitness("bad") == 0.0
    assert sweep.fitness.fitness("good") == 1.0
