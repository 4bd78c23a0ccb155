"""The exec transport for real (subprocess prefixes, the real agent zipapp), and real sweeps
through it with a flaky wrapper that injects transport failures."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.kit.configs import write_sweep

from benchlab.cli import main
from benchlab.devices.bundle import cache_dir
from benchlab.devices.exec import ExecTransport
from benchlab.errors import ConfigError, DeviceError
from benchlab.layout import Store
from benchlab.models import DeviceConfig
from benchlab.sweep.schedule_log import read_retries

pytestmark = pytest.mark.integration

FLAKY = """#!/bin/sh
# flaky.sh COUNTER N FLAG -- CMD...: fail the first N calls, and every call while FLAG exists.
counter="$1"; limit="$2"; flag="$3"; shift 4
n=$(cat "$counter" 2>/dev/null || echo 0)
echo $((n + 1)) > "$counter"
if [ -e "$flag" ] || [ "$n" -lt "$limit" ]; then
  echo "error: unable to upgrade connection: connection refused" >&2
  exit 255
fi
exec "$@"
"""


def device(prefix: list[str], **kw) -> DeviceConfig:  # type: ignore[no-untyped-def]
    return DeviceConfig(transport="exec", command=prefix, python=sys.executable, **kw)


def test_exec_runs_the_agent_through_a_prefix_and_caches_the_bundle(tmp_path: Path) -> None:
    transport = ExecTransport("box", device(["env"]))
    clock = transport.call("clock", None, timeout=30)
    assert clock["finished_at"] >= clock["started_at"]
    cached = list(cache_dir().glob("agent-*.pyz"))
    assert cached, "the bundle is cached on the device"
    for path in cached:
        path.unlink()  # a new pod: the cache is gone; the transport pushes again
    assert transport.call("exists", {"kind": "module", "name": "json"}, timeout=30)["exists"]


def test_benchmark_failure_is_not_transport(tmp_path: Path) -> None:
    transport = ExecTransport("box", device(["env"], workdir=str(tmp_path / "wd")))
    task = {"argv": ["{python}", "-c", "import sys; print('nope'); sys.exit(3)"], "timeout_s": 30}
    envelope = transport.call("run", task, timeout=60)
    assert envelope["exit_code"] == 3 and "nope" in envelope["stdout"]
    assert (tmp_path / "wd").is_dir()


@pytest.mark.parametrize(
    ("prefix", "message"),
    [
        (["no-such-kubectl-here"], "cannot start 'no-such-kubectl-here'"),
        (["sh", "-c", "echo 'ssh: connect: Connection refused' >&2; exit 255", "x"], "exit 255"),
        (["sh", "-c", "exit 127", "x"], "exit 127"),
        (["sh", "-c", "echo hello", "x"], "no JSON answer"),
        (["sh", "-c", "echo 'Error from server (NotFound)' >&2; exit 1", "x"], "error from server"),
    ],
)
def test_prefix_failures_are_transport(prefix: list[str], message: str) -> None:
    with pytest.raises(DeviceError, match=message):
        ExecTransport("box", device(prefix)).call("clock", None, timeout=30)


def test_prefix_timeout_is_transport() -> None:
    with pytest.raises(DeviceError, match="no answer within"):
        ExecTransport("box", device(["sh", "-c", "sleep 5", "x"])).call("clock", None, timeout=0.5)


def test_exec_needs_a_prefix() -> None:
    with pytest.raises(ConfigError, match=r"devices\.box\.command"):
        ExecTransport("box", DeviceConfig(transport="exec"))


def write_config(
    tmp_path: Path,
    devices: dict[str, Any],
    policies: dict[str, Any],
    *,
    threads: list[int] | None = None,
    code: str = "print('{\"decode\": 12.5}')",
) -> Path:
    """flaky.yaml: every device x `threads` (1 and 2 unless given), each point `python -c
    code` reporting its decode rate as JSON."""
    return write_sweep(
        tmp_path / "flaky.yaml",
        experiment="flaky",
        devices=devices,
        policies=policies,
        matrix={
            "device": list(devices),
            "backend": "command",
            "model": "toy",
            "threads": threads or [1, 2],
            "params": {
                "argv": ["{python}", "-c", code],
                "parser": "json",
                "fields": {"decode": "decode"},
            },
        },
    )


def flaky_device(tmp_path: Path, name: str, failures: int) -> tuple[dict, Path]:  # type: ignore[type-arg]
    script = tmp_path / "flaky.sh"
    script.write_text(FLAKY)
    flag = tmp_path / f"{name}.down"
    prefix = ["sh", str(script), str(tmp_path / f"{name}.count"), str(failures), str(flag), "--"]
    return {"transport": "exec", "command": prefix, "python": sys.executable}, flag


def test_real_concurrent_sweep_survives_injected_transport_failures(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # box1: its first three calls fail (the state question before the sweep, the clock
    # question, then the first attempt).
    # box2: down (flag file) for the whole first sweep: breaker trips, its points drain.
    box1, _ = flaky_device(tmp_path, "box1", failures=3)
    box2, flag = flaky_device(tmp_path, "box2", failures=0)
    flag.touch()
    policies = {
        "retries": {"attempts": 3, "backoff_s": 0},
        "breaker": {"failure_threshold": 2, "recovery_after_s": 0.2, "drain_after_cooldowns": 1},
    }
    config = write_config(tmp_path, {"box1": box1, "box2": box2}, policies)
    code = main(["--store", str(store), "run", str(config), "--concurrent", "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0  # holes are recorded results; only --fail-on-error exits 1
    records = {(r["device"], r["spec"]["threads"]): r for r in out["records"]}
    first = records[("box1", 1)]
    assert first["status"] == "ok"
    assert first["warnings"] == ["produced on attempt 2 of 3 after 1 transport failure(s) on box1"]
    assert records[("box1", 2)]["status"] == "ok" and records[("box1", 2)]["attempt"] == 1
    box2_records = [r for (d, _), r in records.items() if d == "box2"]
    assert all(r["status"] == "failed" and r["failure_kind"] == "transport" for r in box2_records)
    assert any(r["error"].startswith("not attempted: device 'box2'") for r in box2_records)

    sweep = Store(store).sweep_dir("flaky")
    lines = read_retries(sweep / "retries.jsonl")
    assert [(line["device"], line["action"]) for line in lines if line["device"] == "box1"] == [
        ("box1", "retry")
    ]
    assert "unable to upgrade connection" in lines[0]["error"]
    schedule = json.loads((sweep / "schedule.json").read_text())
    assert "error" in schedule["clocks"]["box1"]  # its first call (the clock) was refused
    assert schedule["devices"]["box2"]["breaker"]["trips"]

    # box2 comes back: the resumed sweep runs exactly its holes.
    flag.unlink()
    code = main(["--store", str(store), "run", str(config), "--concurrent", "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["skipped"] == 2 and out["ran"] == 2
    assert {r["device"] for r in out["records"]} == {"box2"}


def test_bench_stop_from_another_process_and_worker_ids_reach_the_prefix(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import os
    import subprocess
    import time

    log = tmp_path / "workers.log"
    prefix = ["sh", "-c", f'echo "${{worker_instance_id}}" >> {log}; exec "$@"', "prefix"]
    config = write_config(
        tmp_path,
        {
            "box": {
                "transport": "exec",
                "command": prefix,
                "python": sys.executable,
                "max_concurrency": 2,
            }
        },
        {"retries": {"attempts": 1}},
        threads=[1, 2, 3, 4, 5, 6],
        code="import time; time.sleep(0.4); print('{\"decode\": 3.0}')",
    )
    env = {**os.environ, "BENCHLAB_STORE": str(store)}
    process = subprocess.Popen(
        [sys.executable, "-m", "benchlab", "run", str(config), "--concurrent", "-q"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        sweep = Store(store).sweep_dir("flaky")
        deadline = time.monotonic() + 30
        while not list((store / "runs" / "by-machine").glob("box/*/record.json")):
            assert time.monotonic() < deadline, "the sweep never started a point"
            assert process.poll() is None, process.stdout.read() if process.stdout else ""
            time.sleep(0.05)
        assert main(["--store", str(store), "stop", "flaky"]) == 0
        out, _ = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, out  # a stop request is a clean end: the rest is pending
    assert "stopped:" in out and "left pending" in out
    assert not (sweep / "stop").exists() and not (sweep / "lock").exists()
    records = [json.loads(p.read_text()) for p in store.glob("runs/by-machine/box/*/record.json")]
    assert 1 <= len(records) < 6
    assert all(r["status"] == "ok" for r in records)  # finished in flight, no holes
    assert set(log.read_text().split()) <= {"box-0", "box-1"}
    assert {r["worker"] for r in records} <= {"box-0", "box-1"}

    capsys.readouterr()
    assert main(["--store", str(store), "run", str(config), "--concurrent", "-q"]) == 0
    records = [json.loads(p.read_text()) for p in store.glob("runs/by-machine/box/*/record.json")]
    assert len(records) == 6 and all(r["status"] == "ok" for r in records)
