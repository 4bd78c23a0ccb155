"""SshTransport against a real sshd with no sftp subsystem (as dropbear or a hardened sshd).

The agent used to travel by SFTP `put`, which on such a host fails with a bare "Channel
closed". It now travels over the exec channel and is verified on the device; these tests
first prove the host really has no SFTP, then push, replace and refuse through it.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import paramiko
import pytest
from fleet_hosts import USER, Fleet, FleetHost

from benchlab.devices.bundle import agent_zipapp
from benchlab.devices.ssh import REMOTE_CACHE, SshTransport
from benchlab.errors import DeviceError
from benchlab.models import DeviceConfig

pytestmark = pytest.mark.integration


@pytest.fixture
def bare(fleet: Fleet) -> FleetHost:
    """The fleet's host without SFTP, added once per session."""
    for host in fleet.hosts:
        if host.extra.get("sftp") is False:
            return host
    return fleet.add_host(sftp=False)


def transport(fleet: Fleet, host: FleetHost, **seams: object) -> SshTransport:
    return SshTransport(host.name, DeviceConfig(**fleet.device(host.name)), **seams)  # type: ignore[arg-type]


def remote_cache(fleet: Fleet) -> Path:
    return fleet.user_home / REMOTE_CACHE


def test_the_host_really_has_no_sftp(fleet: Fleet, bare: FleetHost) -> None:
    client = paramiko.SSHClient()
    client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
    try:
        client.connect(
            bare.address,
            port=bare.port,
            username=USER,
            key_filename=str(fleet.client_key),
            look_for_keys=False,
            allow_agent=False,
            timeout=5,
            banner_timeout=5,
            auth_timeout=5,
        )
        with pytest.raises(paramiko.SSHException):
            client.open_sftp()
    finally:
        client.close()


def test_the_agent_is_pushed_and_run_without_sftp(fleet: Fleet, bare: FleetHost) -> None:
    _, sha = agent_zipapp()
    target = remote_cache(fleet) / f"agent-{sha}.pyz"
    target.unlink(missing_ok=True)
    with transport(fleet, bare) as device:
        for _ in range(3):
            assert device.call("clock", timeout=30)["finished_at"] > 0
        assert device.pushes == 1
    assert hashlib.sha256(target.read_bytes()).hexdigest() == sha
    assert target.owner() == USER
    assert stat.S_IMODE(target.parent.stat().st_mode) == 0o700
    assert not [p for p in target.parent.iterdir() if p.name.endswith(".tmp")]
    with transport(fleet, bare) as again:
        again.call("clock", timeout=30)
        assert again.pushes == 0  # found by hash, verified, not sent again


def test_a_planted_or_truncated_agent_is_replaced_not_run(
    fleet: Fleet, bare: FleetHost, tmp_path: Path
) -> None:
    local, sha = agent_zipapp()
    with transport(fleet, bare) as device:
        device.call("clock", timeout=30)
    target = remote_cache(fleet) / f"agent-{sha}.pyz"
    # Same size, other bytes: the old size check would have trusted it.
    data = bytearray(local.read_bytes())
    data[-10:] = b"X" * 10
    target.write_bytes(bytes(data))
    with transport(fleet, bare) as device:
        assert device.call("clock", timeout=30)["finished_at"] > 0
        assert device.pushes == 1
    assert hashlib.sha256(target.read_bytes()).hexdigest() == sha


def test_an_open_cache_dir_is_made_private(fleet: Fleet, bare: FleetHost) -> None:
    cache = remote_cache(fleet)
    with transport(fleet, bare) as device:
        device.call("clock", timeout=30)
    cache.chmod(0o777)
    with transport(fleet, bare) as device:
        device.call("clock", timeout=30)
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700


def test_a_cache_dir_of_another_owner_is_refused_in_one_line(fleet: Fleet, bare: FleetHost) -> None:
    cache = remote_cache(fleet)
    with transport(fleet, bare) as device:
        device.call("clock", timeout=30)
    owner = cache.stat().st_uid
    os.chown(cache, 0, -1)  # root's now: the fleet user must not trust it
    try:
        with transport(fleet, bare) as device, pytest.raises(DeviceError) as caught:
            device.call("clock", timeout=30)
        message = str(caught.value)
        assert "refusing this agent cache dir" in message and "owned by uid 0" in message
        assert "\n" not in message
    finally:
        os.chown(cache, owner, -1)


def test_bytes_damaged_in_transfer_are_refused(
    fleet: Fleet, bare: FleetHost, tmp_path: Path
) -> None:
    local, sha = agent_zipapp()
    (remote_cache(fleet) / f"agent-{sha}.pyz").unlink(missing_ok=True)
    damaged = tmp_path / "damaged.pyz"
    damaged.write_bytes(local.read_bytes()[:-100])  # what a cut-short transfer delivers
    with (
        transport(fleet, bare, _agent=(damaged, sha)) as device,
        pytest.raises(DeviceError, match="damaged in transfer"),
    ):
        device.call("clock", timeout=30)
    assert not (remote_cache(fleet) / f"agent-{sha}.pyz").exists()
