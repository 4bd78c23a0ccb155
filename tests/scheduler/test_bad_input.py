"""Bad input to `bench run --concurrent`: one clear line naming file and key, exit 2, nothing
written."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from tests.kit.configs import write_sweep

from benchlab.cli import main
from benchlab.layout import Store
from benchlab.sweep.lock import SweepLock


def config_file(tmp_path: Path, devices: dict[str, Any], **sections: Any) -> Path:
    """bad.yaml: one command point per device; `sections` (policies, resource_groups) are
    written as given, so each test names only the bad value it is about."""
    return write_sweep(
        tmp_path / "bad.yaml",
        experiment="bad",
        devices=devices,
        matrix={
            "device": list(devices),
            "backend": "command",
            "model": "toy",
            "params": {
                "argv": ["{python}", "-c", "print('{\"decode\": 1.0}')"],
                "fields": {"decode": "decode"},
            },
        },
        **sections,
    )


def refused(store: Path, path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    code = main(["--store", str(store), "run", str(path), "--concurrent"])
    captured = capsys.readouterr()
    assert code == 2
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert not list((store / "runs" / "by-machine").glob("*"))
    return lines[0]


LOCAL = {"transport": "local", "python": sys.executable}


@pytest.mark.parametrize("value", [0, -1])
def test_concurrency_below_one(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], value: int
) -> None:
    path = config_file(tmp_path, {"pi5": {**LOCAL, "max_concurrency": value}})
    line = refused(store, path, capsys)
    assert line.startswith(f"bench: error: {path}: devices.pi5.max_concurrency: ")
    assert "greater than or equal to 1" in line


def test_group_concurrency_below_one(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = config_file(
        tmp_path,
        {"pi5": {**LOCAL, "resource_group": "g"}},
        resource_groups={"g": {"group_max_concurrency": 0}},
    )
    line = refused(store, path, capsys)
    assert f"{path}: resource_groups.g.group_max_concurrency: " in line


def test_unknown_order_policy(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = config_file(tmp_path, {"pi5": LOCAL}, policies={"order": "random"})
    line = refused(store, path, capsys)
    assert line.startswith(f"bench: error: {path}: policies.order: ")
    assert "'spec', 'interleave' or 'shuffle'" in line


def test_device_in_two_groups(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = config_file(tmp_path, {"pi5": {**LOCAL, "resource_group": ["a", "b"]}})
    line = refused(store, path, capsys)
    assert line.startswith(f"bench: error: {path}: devices.pi5.resource_group: ")
    assert "belongs to one resource group" in line


def test_second_run_of_a_running_experiment(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = config_file(tmp_path, {"pi5": LOCAL})
    with SweepLock(Store(store), "bad"):
        code = main(["--store", str(store), "run", str(path), "--concurrent"])
    captured = capsys.readouterr()
    assert code == 2
    (line,) = captured.err.splitlines()
    assert "experiment 'bad' is already running" in line
    assert not list((store / "runs" / "by-machine").glob("*"))
