"""The first sweep on a machine records its specs; later sweeps leave them alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.kit.configs import write_sweep

from benchlab.cli import main
from benchlab.layout import Store, read_json

DEVICES = {
    "box": {"transport": "local", "machine_id": "box"},
    "away": {"transport": "exec", "command": ["/nonexistent/wrapper"], "machine_id": "away"},
}
"""One device that answers and one whose wrapper does not exist."""
MATRIX = {"device": "box", "batch_sizes": [1], "params": {"reps": 1, "batch_steps": 2}}


@pytest.mark.slow
def test_specs_recorded_once_and_unreachable_devices_noted(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_sweep(
        tmp_path / "specs.yaml", experiment="specs", devices=DEVICES, matrix=MATRIX
    )
    assert main(["--store", str(store), "run", str(config)]) == 0
    specs_path = Store(store).private_specs("box")
    specs = read_json(specs_path)
    assert specs["machine_id"] == "box" and specs["hardware"]["cpu"]["model"]
    assert "could not record the specs of 'away'" in capsys.readouterr().out
    assert not Store(store).private_specs("away").exists()
    before = specs_path.stat().st_mtime_ns
    assert main(["--store", str(store), "run", str(config), "--fresh"]) == 0
    assert specs_path.stat().st_mtime_ns == before
