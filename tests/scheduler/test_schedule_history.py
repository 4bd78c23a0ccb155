"""schedule.json keeps every session: a resume must not forget a device's failures.

Before: the resumed sweep rewrote schedule.json with its own assignments only, so a device
whose first session was all transport failures and a breaker trip came out of
`bench devices report` as fit 1.00 with no trips.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchlab.cli import main
from benchlab.layout import Store

from .test_exec import flaky_device, write_config

pytestmark = pytest.mark.integration


def test_report_keeps_failures_of_earlier_sessions_after_a_resume(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    box1, _ = flaky_device(tmp_path, "box1", failures=0)
    box2, flag = flaky_device(tmp_path, "box2", failures=0)
    flag.touch()  # box2's prefix refuses every call: real transport failures, real processes
    policies = {
        "retries": {"attempts": 2, "backoff_s": 0},
        "breaker": {"failure_threshold": 2, "recovery_after_s": 0.2, "drain_after_cooldowns": 1},
    }
    config = write_config(tmp_path, {"box1": box1, "box2": box2}, policies)
    run = ["--store", str(store), "run", str(config), "--concurrent", "--quiet", "--fail-on-error"]
    assert main(run) == 1
    flag.unlink()
    assert main(run) == 0  # the resume runs box2's two points, both ok
    capsys.readouterr()

    schedule = json.loads((Store(store).sweep_dir("flaky") / "schedule.json").read_text())
    assert len(schedule["sessions"]) == 1
    earlier = schedule["sessions"][0]
    assert earlier["devices"]["box2"]["breaker"]["trips"]
    assert {a["status"] for a in earlier["assignments"] if a["device"] == "box2"} == {"failed"}
    # The exporter's fields stay where they were: the latest session at the top level.
    assert schedule["devices"]["box2"]["breaker"]["state"] == "closed"
    assert {a["status"] for a in schedule["assignments"] if a["device"] == "box2"} == {"ok"}
    assert schedule["started_at"] and schedule["ended_at"]

    assert main(["--store", str(store), "devices", "report", "flaky", "--format", "json"]) == 0
    devices = {d["device"]: d for d in json.loads(capsys.readouterr().out)["devices"]}
    box2 = devices["box2"]
    assert box2["transport_failures"] >= 2
    assert box2["trips"] >= 1
    assert box2["fitness"] is not None and box2["fitness"] < 1.0
    assert box2["ok"] == 2 and box2["breaker"] == "closed"
    assert devices["box1"]["fitness"] == 1.0 and devices["box1"]["trips"] == 0


def test_a_third_session_keeps_both_earlier_ones(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    box1, flag = flaky_device(tmp_path, "box1", failures=0)
    flag.touch()
    policies = {
        "retries": {"attempts": 1, "backoff_s": 0},
        "breaker": {"failure_threshold": 5, "recovery_after_s": 0.2, "drain_after_cooldowns": 1},
    }
    config = write_config(tmp_path, {"box1": box1}, policies)
    run = ["--store", str(store), "run", str(config), "--concurrent", "--quiet", "--fail-on-error"]
    assert main(run) == 1
    assert main(run) == 1
    flag.unlink()
    assert main(run) == 0
    capsys.readouterr()
    schedule = json.loads((Store(store).sweep_dir("flaky") / "schedule.json").read_text())
    assert [len(s["assignments"]) for s in schedule["sessions"]] == [2, 2]
    assert "sessions" not in schedule["sessions"][0]  # history is flat, never nested
    assert main(["--store", str(store), "devices", "report", "flaky", "--format", "json"]) == 0
    box1_health = json.loads(capsys.readouterr().out)["devices"][0]
    assert box1_health["fitness"] == pytest.approx(2 / 6)
