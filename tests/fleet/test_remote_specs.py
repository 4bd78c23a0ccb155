"""Remote onboarding: a fleet host's own sysinfo lands in its private specs."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from fleet_hosts import Fleet

from benchlab.errors import DeviceError
from benchlab.layout import Store, read_model
from benchlab.machines.remote_specs import onboard_remote
from benchlab.models import DeviceConfig, MachineSpecs

pytestmark = pytest.mark.integration


def device_python_version() -> str:
    """What the fleet user's interpreter reports (the controller may run another one)."""
    out = subprocess.run(
        ["/usr/bin/python3", "-c", "import platform; print(platform.python_version())"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def test_sysinfo_from_the_device_becomes_private_specs(fleet: Fleet, store: Path) -> None:
    config = DeviceConfig(**fleet.device("h1", machine_id="board-1", tags=["lab"]))
    specs = onboard_remote(Store(store), "h1", config)
    path = store / "runs" / "by-machine" / "board-1" / "specs.json"
    on_disk = read_model(path, MachineSpecs)
    assert on_disk == specs
    assert specs.machine_id == "board-1"
    assert specs.runtime["python"] == device_python_version()
    assert specs.hardware.cpu.cores_logical and specs.hardware.cpu.cores_logical >= 1
    assert specs.tags == ["lab"]
    assert path.read_text().endswith("\n")
    assert json.loads(path.read_text())["$schema"] == "benchmark/machine-specs.v1"
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]

    # Re-onboarding refreshes the hardware but keeps what a person set.
    data = json.loads(path.read_text())
    data.update(registered_at="2024-01-01T00:00:00Z", tags=["kept"], cost_per_hour=0.5)
    data["hardware"]["ram_gb"] = -1
    path.write_text(json.dumps(data))
    again = onboard_remote(Store(store), "h1", config)
    assert again.registered_at == "2024-01-01T00:00:00Z"
    assert again.tags == ["kept"] and again.cost_per_hour == 0.5
    assert again.hardware.ram_gb == specs.hardware.ram_gb


def test_unreachable_device_writes_nothing(fleet: Fleet, store: Path) -> None:
    config = DeviceConfig(**fleet.device("h2", machine_id="board-2", connect_timeout_s=1))
    fleet.stop_sshd("h2")
    with pytest.raises(DeviceError, match="h2"):
        onboard_remote(Store(store), "h2", config)
    assert not (store / "runs" / "by-machine" / "board-2").exists()
