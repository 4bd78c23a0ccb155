"""The exec transport through a real Slurm cluster: `srun -N1 -w NODE --` as the prefix.

A sweep runs real points through srun on two nodes; one node is drained mid-sweep, its
remaining points become holes (or transport failures) and never move to the other node; a
resume after `state=resume` measures exactly those points.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from benchlab.devices.exec import ExecTransport
from benchlab.errors import DeviceError
from benchlab.models import HOLE_ERROR_PREFIX, DeviceConfig

from .conftest import SlurmCluster

pytestmark = [pytest.mark.integration, pytest.mark.slow]

POINT = (
    "import os, time; time.sleep({sleep}); "
    "print('{{\"decode\": 10.0, \"node\": \"%s\"}}' % os.environ.get('SLURMD_NODENAME', '?'))"
)


def srun_prefix(node: str) -> list[str]:
    """The Slurm device of docs/running-sweeps.md: one task on exactly NODE; give up after
    2 s if it is busy."""
    return ["srun", "-N1", "-n1", "-w", node, "--immediate=2", "--"]


@pytest.fixture
def on_cluster(slurm: SlurmCluster, monkeypatch: pytest.MonkeyPatch) -> SlurmCluster:
    """Point this test's srun (and the bench subprocesses it starts) at the test cluster."""
    monkeypatch.setenv("SLURM_CONF", str(slurm.conf))
    for node in ("n1", "n2"):
        slurm.wait_usable(node)
    return slurm


def test_agent_runs_on_the_named_node_through_srun(on_cluster: SlurmCluster) -> None:
    device = DeviceConfig(transport="exec", command=srun_prefix("n2"), python=sys.executable)
    transport = ExecTransport("slurm-n2", device)
    clock = transport.call("clock", None, timeout=60)
    assert clock["finished_at"] >= clock["started_at"]
    task = {"argv": ["{python}", "-c", POINT.format(sleep=0)], "timeout_s": 30}
    envelope = transport.call("run", task, timeout=60)
    assert envelope["exit_code"] == 0, envelope
    assert json.loads(envelope["stdout"])["node"] == "n2"  # slurmd for n2 ran the agent


def test_a_drained_node_is_a_transport_failure(on_cluster: SlurmCluster) -> None:
    on_cluster.set_state("n2", "drain")
    try:
        device = DeviceConfig(transport="exec", command=srun_prefix("n2"), python=sys.executable)
        started = time.monotonic()
        with pytest.raises(DeviceError, match=r"exit 1.*Unable to allocate resources"):
            ExecTransport("slurm-n2", device).call("clock", None, timeout=60)
        assert time.monotonic() - started < 30  # --immediate: refused, not queued forever
    finally:
        on_cluster.set_state("n2", "resume")


def write_sweep(tmp_path: Path, points: int, sleep: float) -> Path:
    devices = {
        f"slurm-{node}": {
            "transport": "exec",
            "command": srun_prefix(node),
            "python": sys.executable,
        }
        for node in ("n1", "n2")
    }
    config = {
        "experiment": "slurm",
        "devices": devices,
        "policies": {
            "retries": {"attempts": 2, "backoff_s": 0},
            "breaker": {
                "failure_threshold": 2,
                "recovery_after_s": 0.5,
                "drain_after_cooldowns": 1,
            },
        },
        "matrix": {
            "device": list(devices),
            "backend": "command",
            "model": "toy",
            "precision": "f32",
            "threads": list(range(1, points + 1)),
            "params": {
                "argv": ["{python}", "-c", POINT.format(sleep=sleep)],
                "parser": "json",
                "fields": {"decode": "decode"},
            },
        },
    }
    path = tmp_path / "slurm.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def run_bench(store: Path, config: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "BENCHLAB_STORE": str(store)}
    return subprocess.Popen(
        [sys.executable, "-m", "benchlab", "run", str(config), "--concurrent", "--format", "json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_drain_mid_sweep_leaves_holes_and_resume_measures_exactly_them(
    on_cluster: SlurmCluster, store: Path, tmp_path: Path
) -> None:
    config = write_sweep(tmp_path, points=6, sleep=0.5)
    process = run_bench(store, config)
    drained = False
    try:
        deadline = time.monotonic() + 90
        n2_records = store / "runs" / "by-machine" / "slurm-n2"
        while not list(n2_records.glob("*/record.json")):
            assert time.monotonic() < deadline, "no point finished on n2"
            assert process.poll() is None, process.communicate()
            time.sleep(0.1)
        on_cluster.set_state("n2", "drain")  # the point in flight finishes; no new ones start
        drained = True
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode in (0, 1), err  # failed points: 1, or 0 where a failure is a result
    first = json.loads(out)
    assert first["failed"] > 0
    records = {(r["device"], r["spec"]["threads"]): r for r in first["records"]}
    assert len(records) == 12
    n1 = [r for (device, _), r in records.items() if device == "slurm-n1"]
    n2 = [r for (device, _), r in records.items() if device == "slurm-n2"]
    assert all(r["status"] == "ok" for r in n1)  # n1 kept going; nothing moved to it
    measured = {json.loads((store / "runs" / "by-machine" / "slurm-n1" / r["run_id"]
                            / "raw" / "stdout.txt").read_text())["node"] for r in n1}  # fmt: skip
    assert measured == {"n1"}
    ok_n2 = [r for r in n2 if r["status"] == "ok"]
    not_ok = [r for r in n2 if r["status"] != "ok"]
    assert ok_n2 and not_ok, [(r["status"], r["error"]) for r in n2]
    assert all(r["failure_kind"] == "transport" for r in not_ok)
    holes = [r for r in not_ok if r["error"].startswith(HOLE_ERROR_PREFIX)]
    assert holes, [r["error"] for r in not_ok]
    assert all(r["error"].endswith("Re-run to retry this point.") for r in holes)

    on_cluster.set_state("n2", "resume")
    drained = False
    process = run_bench(store, config)
    try:
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
        if drained:
            on_cluster.wait_usable("n2")
    assert process.returncode == 0, err
    second = json.loads(out)
    assert second["skipped"] == 12 - len(not_ok) and second["ran"] == len(not_ok)
    assert {r["spec_id"] for r in second["records"]} == {r["spec_id"] for r in not_ok}
    assert all(r["status"] == "ok" and r["device"] == "slurm-n2" for r in second["records"])
