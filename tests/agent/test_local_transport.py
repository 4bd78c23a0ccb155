"""LocalTransport: agent answers come back as JSON; every failure of the agent is a DeviceError."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from benchlab.devices import open_transport
from benchlab.devices.local import LocalTransport
from benchlab.errors import DeviceError
from benchlab.models import AgentEnvelope, AgentTask, DeviceConfig


def _script(path: Path, body: str) -> str:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


@pytest.fixture(params=["zipapp", "module"])
def transport(request: pytest.FixtureRequest) -> LocalTransport:
    return LocalTransport("here", DeviceConfig(), agent=request.param)


def test_clock_and_exists_round_trip(transport: LocalTransport):
    answer = transport.call("clock", timeout=30)
    assert answer["started_at"] <= answer["finished_at"]
    assert transport.call("exists", {"kind": "module", "name": "json"}, timeout=30)["exists"]


def test_default_interpreter_is_the_controllers_own():
    assert LocalTransport("here", DeviceConfig()).python == sys.executable
    assert LocalTransport("here", DeviceConfig(python="python3.99")).python == "python3.99"
    assert isinstance(open_transport("here", DeviceConfig()), LocalTransport)


def test_benchmark_failure_comes_back_inside_the_envelope(transport: LocalTransport):
    task = AgentTask(argv=["{python}", "-c", "raise SystemExit(5)"])
    envelope = AgentEnvelope.model_validate(transport.call("run", task.model_dump(), timeout=60))
    assert envelope.exit_code == 5
    assert envelope.timed_out is False


def test_env_and_workdir_are_applied(tmp_path: Path):
    config = DeviceConfig(env={"BL_DEVICE_VAR": "v1"}, workdir=str(tmp_path / "work"))
    task = AgentTask(
        argv=["{python}", "-c", "import os; print(os.getcwd(), os.environ['BL_DEVICE_VAR'])"]
    )
    envelope = LocalTransport("here", config).call("run", task.model_dump(), timeout=60)
    assert envelope["stdout"].split() == [str(tmp_path / "work"), "v1"]


def test_missing_interpreter_is_a_device_error():
    device = LocalTransport("ghost", DeviceConfig(python="/nonexistent/python3"))
    with pytest.raises(DeviceError, match=r"ghost.*cannot start interpreter") as info:
        device.call("clock", timeout=30)
    assert info.value.device == "ghost"


def test_agent_printing_garbage_is_a_device_error(tmp_path: Path):
    python = _script(tmp_path / "garbage", "echo 'Welcome to the login banner'\n")
    with pytest.raises(DeviceError, match="not one JSON object"):
        LocalTransport("here", DeviceConfig(python=python)).call("clock", timeout=30)


def test_agent_crashing_is_a_device_error(tmp_path: Path):
    python = _script(tmp_path / "crash", "echo 'Segmentation fault' >&2\nexit 139\n")
    with pytest.raises(DeviceError, match=r"failed \(exit 139\): Segmentation fault"):
        LocalTransport("here", DeviceConfig(python=python)).call("sysinfo", timeout=30)


def test_agent_that_never_answers_is_a_device_error(tmp_path: Path):
    python = _script(tmp_path / "hang", "sleep 30\n")
    t0 = time.monotonic()
    with pytest.raises(DeviceError, match=r"no answer within 0\.5 s"):
        LocalTransport("here", DeviceConfig(python=python)).call("clock", timeout=0.5)
    assert time.monotonic() - t0 < 10


def test_exists_that_cannot_tell_is_a_device_error(transport: LocalTransport, tmp_path: Path):
    pkg = tmp_path / "pp" / "brokenpkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise RuntimeError('half-installed')\n")
    transport.config = DeviceConfig(env={"PYTHONPATH": str(tmp_path / "pp")})
    with pytest.raises(DeviceError, match="cannot tell"):
        transport.call("exists", {"kind": "module", "name": "brokenpkg.sub"}, timeout=30)


def test_unusable_workdir_is_a_device_error(tmp_path: Path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    device = LocalTransport("here", DeviceConfig(workdir=str(blocker / "sub")))
    with pytest.raises(DeviceError, match="workdir"):
        device.call("clock", timeout=30)
