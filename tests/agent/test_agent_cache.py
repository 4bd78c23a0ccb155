"""The agent cache under attack: planted zipapps, open dirs and dirs of another owner.

Real files, real modes, real owners (chown needs root; those cases skip without it), and the
real exec bootstrap run through an `env` prefix, the way `kubectl exec` would run it.
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
import zipfile
from pathlib import Path

import pytest

from benchlab.devices.bundle import agent_zipapp, build_bytes
from benchlab.devices.exec import ExecTransport
from benchlab.errors import DeviceError, StoreError
from benchlab.models import DeviceConfig

OTHER_UID = 65534  # nobody


def evil_zipapp(path: Path, marker: Path) -> None:
    """A zipapp that, if ever executed, leaves `marker` behind and answers like the agent."""
    path.parent.mkdir(parents=True, exist_ok=True)
    code = (
        f"open({str(marker)!r}, 'w').write('ran as ' + str(__import__('os').getuid()))\n"
        'print(\'{"started_at": 0, "finished_at": 0}\')\n'
    )
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("__main__.py", code)


def full_sha() -> str:
    return hashlib.sha256(build_bytes()).hexdigest()


@pytest.fixture
def device_dirs(tmp_path: Path) -> tuple[Path, Path, list[str]]:
    """The two cache dirs the bootstrap looks in, and an exec prefix that points it there."""
    xdg = tmp_path / "xdg"
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    prefix = ["env", f"XDG_CACHE_HOME={xdg}", f"TMPDIR={tmpdir}"]
    return xdg / "benchlab", tmpdir / f"benchlab-{os.getuid()}", prefix


def transport(prefix: list[str]) -> ExecTransport:
    config = DeviceConfig(transport="exec", command=prefix, python=sys.executable)
    return ExecTransport("box", config)


def chown_or_skip(path: Path, uid: int) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to give a dir another owner")
    os.chown(path, uid, -1)


def test_a_planted_agent_with_the_right_name_is_not_executed(
    device_dirs: tuple[Path, Path, list[str]], tmp_path: Path
) -> None:
    home_cache, tmp_cache, prefix = device_dirs
    marker = tmp_path / "pwned"
    name = f"agent-{full_sha()}.pyz"
    for directory in (home_cache, tmp_cache):
        evil_zipapp(directory / name, marker)
    clock = transport(prefix).call("clock", None, timeout=60)
    assert clock["finished_at"] > 0  # the real agent answered
    assert not marker.exists()
    assert hashlib.sha256((home_cache / name).read_bytes()).hexdigest() == full_sha()


def test_a_file_swapped_after_the_push_is_not_executed_and_is_replaced(
    device_dirs: tuple[Path, Path, list[str]], tmp_path: Path
) -> None:
    home_cache, _, prefix = device_dirs
    marker = tmp_path / "pwned"
    device = transport(prefix)
    device.call("clock", None, timeout=60)  # pushes; later calls send only the header
    target = home_cache / f"agent-{full_sha()}.pyz"
    target.unlink()
    evil_zipapp(target, marker)
    assert device.call("clock", None, timeout=60)["finished_at"] > 0
    assert not marker.exists()
    assert hashlib.sha256(target.read_bytes()).hexdigest() == full_sha()


def test_a_world_writable_cache_dir_of_ours_is_made_private(
    device_dirs: tuple[Path, Path, list[str]], tmp_path: Path
) -> None:
    home_cache, _, prefix = device_dirs
    home_cache.mkdir(parents=True)
    home_cache.chmod(0o777)
    evil_zipapp(home_cache / f"agent-{full_sha()}.pyz", tmp_path / "pwned")
    transport(prefix).call("clock", None, timeout=60)
    assert stat.S_IMODE(home_cache.stat().st_mode) == 0o700
    assert not (tmp_path / "pwned").exists()


def test_a_cache_dir_of_another_user_is_refused(
    device_dirs: tuple[Path, Path, list[str]], tmp_path: Path
) -> None:
    home_cache, tmp_cache, prefix = device_dirs
    marker = tmp_path / "pwned"
    name = f"agent-{full_sha()}.pyz"
    # Another user made $TMPDIR/benchlab-<our uid> first and put "our" agent in it.
    evil_zipapp(tmp_cache / name, marker)
    tmp_cache.chmod(0o755)
    (tmp_cache / name).chmod(0o755)
    chown_or_skip(tmp_cache / name, OTHER_UID)
    chown_or_skip(tmp_cache, OTHER_UID)
    # With ~/.cache usable, the agent lands there and the foreign dir is left alone.
    transport(prefix).call("clock", None, timeout=60)
    assert not marker.exists()
    assert (home_cache / name).is_file()
    assert (tmp_cache / name).stat().st_uid == OTHER_UID  # not touched, not used
    # With both dirs foreign, the device says so in one line and runs nothing.
    (home_cache / name).unlink()
    chown_or_skip(home_cache, OTHER_UID)
    with pytest.raises(DeviceError, match="no private cache dir") as caught:
        transport(prefix).call("clock", None, timeout=60)
    assert "owned by uid 65534" in str(caught.value)
    assert not marker.exists()


def test_a_symlinked_cache_dir_is_refused(
    device_dirs: tuple[Path, Path, list[str]], tmp_path: Path
) -> None:
    home_cache, tmp_cache, prefix = device_dirs
    elsewhere = tmp_path / "elsewhere"
    evil_zipapp(elsewhere / f"agent-{full_sha()}.pyz", tmp_path / "pwned")
    home_cache.parent.mkdir(parents=True)
    home_cache.symlink_to(elsewhere, target_is_directory=True)
    transport(prefix).call("clock", None, timeout=60)
    assert not (tmp_path / "pwned").exists()
    assert (tmp_cache / f"agent-{full_sha()}.pyz").is_file()


# --- the controller's own cache (local transport) --------------------------------------------


def test_local_cache_replaces_a_planted_symlink(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    path, sha = agent_zipapp(cache)
    path.unlink()
    decoy = tmp_path / "decoy.pyz"
    decoy.write_bytes(build_bytes())  # even the right bytes, through a link, are not trusted
    path.symlink_to(decoy)
    assert agent_zipapp(cache) == (path, sha)
    assert not path.is_symlink()
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700


def test_local_cache_dir_of_another_user_is_refused(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    chown_or_skip(cache, OTHER_UID)
    with pytest.raises(StoreError, match=r"refusing this agent cache dir.*owned by uid 65534"):
        agent_zipapp(cache)


def test_local_cache_world_writable_dir_is_made_private(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    cache.chmod(0o777)
    agent_zipapp(cache)
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700


def test_a_device_answering_deeply_nested_json_is_a_device_error() -> None:
    """A hostile device (or prefix) answering 100k `[` is a transport failure, not a crash."""
    answer = "python3 -c \"print('[' * 100000)\""
    device = transport(["sh", "-c", answer, "prefix"])
    with pytest.raises(DeviceError, match="no JSON answer"):
        device.call("clock", None, timeout=60)
