"""`bench devices report`: per-device error analysis of a real (fake-device) sweep."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.kit.scheduler import Events, fleet_factory, real_runner
from tests.scheduler.lab import make_config

from benchlab.cli import main
from benchlab.devices.fake import FakeBehaviour
from benchlab.layout import Store
from benchlab.observe.health import report
from benchlab.sweep.scheduler import run_sweep_concurrent

FAST_BREAKER = {"failure_threshold": 2, "recovery_after_s": 0.1, "drain_after_cooldowns": 1}


@pytest.fixture
def swept(store: Path) -> Path:
    config = make_config(
        {"laptop": {}, "pi5": {}, "box": {}},
        policies={"retries": {"attempts": 2, "backoff_s": 0}, "breaker": FAST_BREAKER},
    )
    fleet = {
        "laptop": FakeBehaviour(fail_next=1, duration_s=0.3),  # a sweep spanning > 1 s
        "pi5": FakeBehaviour(down=True),
        "box": FakeBehaviour(exit_code=3),
    }
    run_sweep_concurrent(
        store,
        config,
        "lab.yaml",
        progress=Events(),
        _runner=real_runner(store, config),
        _transport_factory=fleet_factory(fleet),
        _measure_clocks=False,
    )
    return store


@pytest.mark.slow
def test_report_per_device(swept: Path) -> None:
    health = report(Store(swept), "exp")
    devices = {d.device: d for d in health.devices}
    laptop, pi5, box = devices["laptop"], devices["pi5"], devices["box"]
    assert laptop.ok == 6 and laptop.transport_failures == 1 and laptop.holes == 0
    assert laptop.fitness == pytest.approx(6 / 7)  # 6 ok attempts of 7
    assert laptop.uptime_share == pytest.approx(1.0)
    assert pi5.ok == 0 and pi5.holes > 0 and pi5.transport_failures >= 2
    assert pi5.breaker == "drained" and pi5.trips == 1 and pi5.fitness == 0.0
    assert pi5.uptime_share < 1.0
    assert box.failed == 6 and box.transport_failures == 0 and box.mtbf_s is None
    kinds = {(a.device, a.kind) for a in health.failed_attempts}
    assert ("box", "measurement") in kinds and ("pi5", "transport") in kinds
    assert not any(a.error.startswith("not attempted") for a in health.failed_attempts)


@pytest.mark.slow
def test_cli_report_json_and_logs(swept: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--store", str(swept), "devices", "report", "exp", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {d["device"] for d in data["devices"]} == {"laptop", "pi5", "box"}
    assert main(["--store", str(swept), "devices", "report", "exp", "--logs"]) == 0
    out = capsys.readouterr().out
    assert "failed attempts" in out and "measurement" in out


def test_unknown_experiment_is_one_line(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--store", str(store), "devices", "report", "nope"]) == 2
    assert "not a sweep directory" in capsys.readouterr().err
