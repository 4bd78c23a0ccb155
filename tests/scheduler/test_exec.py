"""The exec transport for real (subprocess prefixes, the real agent zipapp), and real sweeps
through it with a flaky wrapper that injects transport failures."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

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


def write_config(tmp_path: Path, devices: dict, policies: dict) -> Path:  # type: ignore[type-arg]
    config = {
        "experiment": "flaky",
        "devices": devices,
        "policies": policies,
        "matrix": {
            "device": list(devices),
            "backend": "command",
            "model": "toy",
            "precision": "f32",
            "threads": [1, 2],
            "params": {
                "argv": ["{python}", "-c", "print('{\"decode\": 12.5}')"],
                "parser": "json",
                "fields": {"decode": "decode"},
            },
        },
    }
    path = tmp_path / "flaky.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def flaky_device(tmp_path: Path, name: str, failures: int) -> tuple[dict, Path]:  # type: ignore[type-arg]
    script = tmp_path / "flaky.sh"
    script.write_text(FLAKY)
    flag = tmp_path / f"{name}.down"
    prefix = ["sh", str(script), str(tmp_path / f"{name}.count"), str(failures), str(flag), "--"]
    return {"transport": "exec", "command": prefix, "python": sys.executable}, flag


def test_real_concurrent_sweep_survives_injected_transport_failures(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # box1: its first two calls fail (the clock question, then the first attempt).
    # box2: down (flag file) for the whole first sweep: breaker trips, its points drain.
    box1, _ = flaky_device(tmp_path, "box1", failures=2)
    box2, flag = flaky_device(tmp_path, "box2", failures=0)
    flag.touch()
    policies = {
        "retries": {"attempts": 3, "backoff_s": 0},
        "breaker": {"failure_threshold": 2, "recovery_after_s": 0.2, "drain_after_cooldowns": 1},
    }
    config = write_config(tmp_path, {"box1": box1, "box2": box2}, policies)
    code = main(["--store", str(store), "run", str(config), "--concurrent", "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1
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
