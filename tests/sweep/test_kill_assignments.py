"""A `bench run --concurrent` killed outright (SIGKILL) keeps which worker ran and which
held each point: assignments.jsonl is written as it happens, and the resumed session
reports the points that were on a worker and gives the killed session its assignments."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.kit.configs import write_sweep
from tests.sweep.lab import ONE_ATTEMPT, command_params

from benchlab.cli import main
from benchlab.sweep.assignments import ASSIGNMENTS, held_at_end, read_assignments

SLOW = "import json, time; time.sleep(0.6); print(json.dumps(dict(decode=10)))"
DEADLINE_S = 60.0


def _lines(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().splitlines()]  # every line whole


@pytest.mark.integration
def test_sigkill_mid_sweep_keeps_worker_assignments(
    tmp_path: Path, store: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    devices = {
        "a": {"transport": "local", "max_concurrency": 2},
        "b": {"transport": "local", "machine_id": "b-m", "max_concurrency": 2},
    }
    path = write_sweep(
        tmp_path / "held.yaml",
        experiment="held",
        devices=devices,
        policies=ONE_ATTEMPT,
        matrix={
            "device": ["a", "b"],
            "threads": list(range(1, 7)),
            "backend": "command",
            "params": command_params(SLOW),
        },
    )
    log = store / "runs/sweeps/held" / ASSIGNMENTS
    env = {**os.environ, "BENCHLAB_STORE": str(store)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchlab", "run", str(path), "--concurrent", "--quiet"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + DEADLINE_S
        # kill once some attempts finished and the next ones are on their workers
        while time.monotonic() < deadline:
            lines = _lines(log)
            if sum(x["event"] == "finish" for x in lines) >= 2 and held_at_end(lines):
                break
            assert proc.poll() is None, "the sweep finished before it could be killed"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    before = read_assignments(log)
    held = held_at_end(before)
    workers = {"a-0", "a-1", "b-0", "b-1"}
    assert held and all(x["worker"] in workers and x["worker"][0] == x["device"] for x in held)
    (killed,) = {x["session"] for x in before}
    ran = {x["run_id"]: x["worker"] for x in before if x["event"] == "finish"}
    assert len(ran) >= 2

    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    assert main(["run", str(path), "--concurrent"]) == 0
    out = capsys.readouterr().out
    for line in held:
        assert f"HELD {line['run_id']} was on {line['worker']}" in out
    schedule = json.loads((store / "runs/sweeps/held/schedule.json").read_text())
    (earlier,) = [s for s in schedule["sessions"] if s.get("session") == killed]
    assert {a["run_id"]: a["worker"] for a in earlier["assignments"]} == ran
    assert [(x["run_id"], x["worker"]) for x in earlier["held_at_end"]] == [
        (x["run_id"], x["worker"]) for x in held
    ]
    records = [
        json.loads(p.read_text()) for p in (store / "runs/by-machine").glob("*/*/record.json")
    ]
    assert len(records) == 12 and all(r["status"] == "ok" for r in records)
    assert schedule["session"] != killed
    assert held_at_end(read_assignments(log)) == held  # the resume finished all it started
