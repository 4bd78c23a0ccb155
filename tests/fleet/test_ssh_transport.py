"""SshTransport against real sshd hosts: reuse, agent push, and every fault it must map."""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from fleet_hosts import USER, Fleet

from benchlab.devices.bundle import agent_zipapp
from benchlab.devices.ssh import REMOTE_CACHE, SshTransport
from benchlab.errors import ConfigError, DeviceError
from benchlab.models import AgentEnvelope, DeviceConfig

pytestmark = pytest.mark.integration


def transport(fleet: Fleet, name: str, **overrides: Any) -> SshTransport:
    return SshTransport(name, DeviceConfig(**fleet.device(name, **overrides)))


def remote_agent(fleet: Fleet) -> Path:
    _, sha = agent_zipapp()
    return fleet.user_home / REMOTE_CACHE / f"agent-{sha}.pyz"


def sleep_task(seconds: float) -> dict[str, Any]:
    return {"argv": ["/bin/sleep", str(seconds)], "timeout_s": 60}


def test_one_connection_serves_many_calls(fleet: Fleet) -> None:
    with transport(fleet, "h0") as device:
        answers = [device.call("clock", timeout=10) for _ in range(5)]
        assert device.connects == 1
    for answer in answers:
        assert answer["started_at"] <= answer["finished_at"]
    assert abs(answers[0]["started_at"] - time.time()) < 30


def test_agent_is_pushed_once_per_hash_and_found_by_hash(fleet: Fleet) -> None:
    target = remote_agent(fleet)
    target.unlink(missing_ok=True)
    local, sha = agent_zipapp()
    with transport(fleet, "h0") as first:
        first.call("clock", timeout=10)
        first.call("clock", timeout=10)
        assert first.pushes == 1
    assert hashlib.sha256(target.read_bytes()).hexdigest() == sha
    assert target.owner() == USER
    # h1 shares this machine's disk, so it finds the same hash already there.
    with transport(fleet, "h1") as second:
        second.call("clock", timeout=10)
        assert second.pushes == 0
    # A truncated upload (wrong size) is replaced, not trusted.
    target.write_bytes(local.read_bytes()[:100])
    with transport(fleet, "h1") as third:
        third.call("clock", timeout=10)
        assert third.pushes == 1
    assert hashlib.sha256(target.read_bytes()).hexdigest() == sha
    assert not [p for p in target.parent.iterdir() if p.name.endswith(".tmp")]


def test_benchmark_failure_is_a_result_not_a_transport_error(fleet: Fleet) -> None:
    with transport(fleet, "h0", env={"FLEET_MARK": "it's $here"}) as device:
        raw = device.call(
            "run",
            {"argv": ["/bin/sh", "-c", 'echo "$FLEET_MARK"; echo oops >&2; exit 3']},
            timeout=20,
        )
    envelope = AgentEnvelope.model_validate(raw)
    assert envelope.exit_code == 3
    assert envelope.stdout.strip() == "it's $here"
    assert "oops" in envelope.stderr


def test_agent_that_cannot_answer_is_a_device_error(fleet: Fleet) -> None:
    with transport(fleet, "h0") as device:
        with pytest.raises(DeviceError, match="exists: payload must be"):
            device.call("exists", {"kind": "nonsense"}, timeout=10)
        assert device.call("exists", {"kind": "binary", "name": "sh"}, timeout=10)["exists"]


def test_missing_interpreter_is_a_device_error(fleet: Fleet) -> None:
    with transport(fleet, "h0", python="/nonexistent/python3") as device:
        with pytest.raises(DeviceError, match=r"agent `clock` exited 127"):
            device.call("clock", timeout=10)


def test_workdir_and_interpreter_wrapper(fleet: Fleet) -> None:
    """The wrapper adds 1 to the niceness sshd started with: this suite's own (the fleet's
    sshd is started from it), whatever `nice` the suite runs under."""
    with transport(fleet, "h0", workdir="/tmp", python="nice -n 1 /usr/bin/python3") as device:
        raw = device.call("run", {"argv": ["/bin/sh", "-c", "pwd; nice"]}, timeout=20)
    assert raw["stdout"].split() == ["/tmp", str(min(os.nice(0) + 1, 19))]


def test_nobody_listening_fails_fast(fleet: Fleet) -> None:
    host = fleet.hosts[0]
    config = DeviceConfig(
        transport="ssh",
        host=host.address,
        port=host.port + 1 if host.port != 22 else 2222,
        user=USER,
        identity_file=str(fleet.client_key),
        insecure_accept_host_key=True,
        connect_timeout_s=3,
    )
    started = time.monotonic()
    with SshTransport("nobody", config) as device, pytest.raises(DeviceError) as caught:
        device.call("clock", timeout=10)
    assert time.monotonic() - started < 3
    assert "connecting failed" in str(caught.value)
    assert "Unable to connect" in str(caught.value) or "refused" in str(caught.value)


def test_hung_sshd_on_connect_is_bounded_then_recovers(fleet: Fleet) -> None:
    device = transport(fleet, "h2", connect_timeout_s=1.5)
    fleet.stop_sshd("h2")
    started = time.monotonic()
    with pytest.raises(DeviceError) as caught:
        device.call("clock", timeout=10)
    assert time.monotonic() - started < 3 * 1.5 + 2
    assert "h2" in str(caught.value)
    fleet.start_sshd("h2")
    assert "started_at" in device.call("clock", timeout=10)
    device.close()


def test_hung_mid_command_times_out_and_reconnects(fleet: Fleet) -> None:
    device = transport(fleet, "h2")
    device.call("clock", timeout=10)
    timer = threading.Timer(0.8, fleet.stop_sshd, args=("h2",))
    timer.start()
    started = time.monotonic()
    try:
        with pytest.raises(DeviceError, match="no answer within 3s"):
            device.call("run", sleep_task(2), timeout=3)
        assert time.monotonic() - started < 5
        assert not device.connected
    finally:
        timer.join()
        fleet.start_sshd("h2")
    assert "started_at" in device.call("clock", timeout=10)
    assert device.connects == 2
    device.close()


def test_slow_command_is_cut_at_the_call_timeout(fleet: Fleet) -> None:
    with transport(fleet, "h0", command_timeout_s=1.0) as device:
        started = time.monotonic()
        with pytest.raises(DeviceError, match="no answer within 1s"):
            device.call("run", sleep_task(5), timeout=30)  # config caps it at 1 s
        assert time.monotonic() - started < 3
        assert "started_at" in device.call("clock", timeout=10)


def test_link_cut_on_open_connection_then_restored(needs_cut: Fleet) -> None:
    fleet = needs_cut
    device = transport(fleet, "h3", connect_timeout_s=2)
    device.call("clock", timeout=10)
    fleet.cut("h3")
    started = time.monotonic()
    with pytest.raises(DeviceError) as caught:
        device.call("clock", timeout=10)
    assert time.monotonic() - started < 3 * 2 + 2
    assert "h3" in str(caught.value)
    # A new connection fails at once: the guard route answers "no route to host".
    started = time.monotonic()
    with pytest.raises(DeviceError, match="connecting failed"):
        device.call("clock", timeout=10)
    assert time.monotonic() - started < 3
    fleet.restore("h3")
    assert "started_at" in device.call("clock", timeout=10)
    assert device.connects == 2
    device.close()


def test_dead_idle_connection_is_noticed_within_the_connect_timeout(needs_cut: Fleet) -> None:
    fleet = needs_cut
    device = transport(fleet, "h3", connect_timeout_s=2)
    device.call("clock", timeout=10)
    assert device.connected
    fleet.cut("h3")
    started = time.monotonic()
    while device.connected and time.monotonic() - started < 10:
        time.sleep(0.1)
    noticed = time.monotonic() - started
    fleet.restore("h3")
    assert not device.connected
    assert noticed < 6, f"dead link noticed after {noticed:.1f}s"
    assert "started_at" in device.call("clock", timeout=10)
    device.close()


def test_unknown_host_key_is_refused_unless_opted_out(
    fleet: Fleet, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    alt = tmp_path / "ssh_config"
    alt.write_text(fleet.ssh_config.read_text().replace(str(fleet.known_hosts), str(empty)))
    with transport(fleet, "h0", ssh_config=str(alt)) as device:
        with pytest.raises(DeviceError, match="not in known_hosts; add it or set"):
            device.call("clock", timeout=10)
        assert device.connects == 0
    caplog.set_level(logging.WARNING, logger="benchlab.devices.ssh")
    with transport(fleet, "h0", ssh_config=str(alt), insecure_accept_host_key=True) as device:
        assert "started_at" in device.call("clock", timeout=10)
    assert "accepting unverified" in caplog.text
    assert empty.read_text() == ""  # the opt-out never writes known_hosts


def test_changed_host_key_is_refused(fleet: Fleet, tmp_path: Path) -> None:
    wrong = fleet.known_hosts_line("h1").split()
    wrong[0] = fleet.known_hosts_line("h0").split()[0]  # h0's address with h1's key
    bad = tmp_path / "known_hosts"
    bad.write_text(" ".join(wrong) + "\n")
    alt = tmp_path / "ssh_config"
    alt.write_text(fleet.ssh_config.read_text().replace(str(fleet.known_hosts), str(bad)))
    for insecure in (False, True):
        with transport(fleet, "h0", ssh_config=str(alt), insecure_accept_host_key=insecure) as d:
            with pytest.raises(DeviceError, match="does not match known_hosts"):
                d.call("clock", timeout=10)


def test_user_port_identity_from_config_and_default_known_hosts(
    fleet: Fleet, tmp_path: Path
) -> None:
    """No ssh_config: the DeviceConfig fields and ~/.ssh/known_hosts do the work."""
    host = fleet.hosts[1]
    ssh_dir = Path.home() / ".ssh"
    ssh_dir.mkdir(mode=0o700)
    (ssh_dir / "known_hosts").write_text(fleet.known_hosts_line(host.name) + "\n")
    config = DeviceConfig(
        transport="ssh",
        host=host.address,
        port=host.port,
        user=USER,
        identity_file=str(fleet.client_key),
        python="/usr/bin/python3",
    )
    with SshTransport("plain", config) as device:
        assert "started_at" in device.call("clock", timeout=10)
    wrong_user = config.model_copy(update={"user": "nobody"})
    with SshTransport("plain", wrong_user) as device:
        with pytest.raises(DeviceError, match="Authentication failed"):
            device.call("clock", timeout=10)


def test_bad_config_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"devices\.x\.env: '1BAD'"):
        SshTransport("x", DeviceConfig(transport="ssh", env={"1BAD": "v"}))
    with pytest.raises(ConfigError, match=r"devices\.x\.ssh_config: .*file not found"):
        SshTransport("x", DeviceConfig(transport="ssh", ssh_config=str(tmp_path / "nope")))
    with pytest.raises(ConfigError, match=r"devices\.x\.python"):
        SshTransport("x", DeviceConfig(transport="ssh", python="'unclosed"))
