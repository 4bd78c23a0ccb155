"""The agent zipapp: the benchlab.agent package as one deterministic .pyz, named by its hash.

Deterministic (fixed timestamps and modes, sorted entries, stored not deflated), so the same
sources always give the same bytes and the same sha256: a remote transport pushes the file
once per hash and every later sweep finds it already there. Only the agent package goes in,
plus a stub `benchlab/__init__.py`, so the device never imports anything but the stdlib.

The cache is trusted only as far as it is private. The sha is public (anyone can build the
same zipapp), so on a shared node another user can plant `agent-<sha>.pyz` under
`$TMPDIR/benchlab-<uid>/` before we ever run, and whoever executes it runs their code as us.
So every place that runs a cached agent (the controller's cache here, the exec bootstrap and
the ssh installer on a device) goes through the same three functions, shipped to devices as
source (`CACHE_CODE`):

- `private_dir_problem`: the dir is created 0700; one that is a symlink or owned by another
  user is refused (it cannot be made safe by us); one of ours that is group- or
  world-writable is tightened to 0700 first (its contents are then re-verified anyway);
- `verified_file`: a cached agent is used only if it is a regular file (not a symlink)
  owned by us, not writable by others, and its sha256 matches; anything else is replaced;
- `install_file`: written to a temp file in that dir, fsynced, renamed into place.

Usage::

    path, sha = agent_zipapp()
    subprocess.run([sys.executable, str(path), "clock"])
"""

from __future__ import annotations

import hashlib
import inspect
import io
import os
import stat
import tempfile
import zipfile
from pathlib import Path

import benchlab.agent
from benchlab.errors import StoreError
from benchlab.layout import user_cache_dir as cache_dir

SHEBANG = b"#!/usr/bin/env python3\n"
FIXED_DATE = (1980, 1, 1, 0, 0, 0)
PACKAGE_STUB = '"""benchlab (agent-only build): the device side of benchlab."""\n'
ROOT_MAIN = (
    '"""The benchlab agent zipapp: `python agent.pyz VERB`."""\n'
    "import time\n"
    "\n"
    "_STARTED_AT = time.time()\n"
    "\n"
    "import sys  # noqa: E402\n"
    "\n"
    "from benchlab.agent.verbs import main  # noqa: E402\n"
    "\n"
    "sys.exit(main(started_at=_STARTED_AT))\n"
)


def private_dir_problem(directory: str) -> str | None:
    """Make `directory` a private cache dir; None when it is one, else why it cannot be.

    Shipped to devices as source (CACHE_CODE): standard library only, no benchlab imports.
    """
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        info = os.lstat(directory)
    except OSError as exc:
        return f"cannot create it: {exc.strerror}"
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        return "it is a symlink or not a directory"
    if info.st_uid != os.getuid():
        return f"it is owned by uid {info.st_uid}, not by this user (uid {os.getuid()})"
    if info.st_mode & 0o077:
        try:
            os.chmod(directory, 0o700)
        except OSError as exc:
            return f"it is mode {stat.S_IMODE(info.st_mode):o} and cannot be made 700: {exc}"
    return None


def verified_file(path: str, sha: str) -> bool:
    """Whether `path` is a regular file of ours, writable by us alone, with this sha256."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o022:
            return False
        digest = hashlib.sha256()
        while True:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            digest.update(chunk)
        return digest.hexdigest() == sha
    finally:
        os.close(fd)


def install_file(directory: str, name: str, data: bytes) -> str:
    """Write `data` to `directory/name` atomically (temp file, fsync, rename); its path."""
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o700)
        target = os.path.join(directory, name)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return target


CACHE_CODE = "from __future__ import annotations\nimport hashlib, os, stat, tempfile\n" + "".join(
    inspect.getsource(function) for function in (private_dir_problem, verified_file, install_file)
)
"""The three functions above as source, for the exec bootstrap and the ssh installer."""


def agent_sources() -> list[tuple[str, bytes]]:
    """(archive name, bytes) of every file that goes into the zipapp, sorted by name."""
    package_dir = Path(benchlab.agent.__file__).resolve().parent
    entries = [
        ("__main__.py", ROOT_MAIN.encode()),
        ("benchlab/__init__.py", PACKAGE_STUB.encode()),
    ]
    for path in sorted(package_dir.glob("*.py")):
        entries.append((f"benchlab/agent/{path.name}", path.read_bytes()))
    return sorted(entries)


def build_bytes() -> bytes:
    buffer = io.BytesIO()
    buffer.write(SHEBANG)
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as archive:
        for name, data in agent_sources():
            info = zipfile.ZipInfo(name, date_time=FIXED_DATE)
            info.external_attr = 0o644 << 16
            info.create_system = 3
            archive.writestr(info, data)
    return buffer.getvalue()


def agent_zipapp(directory: Path | None = None) -> tuple[Path, str]:
    """Build (once per content hash) the agent zipapp; return (path, sha256 hex).

    The cache dir must be private and the cached file must verify (module docstring);
    a dir owned by someone else is a StoreError, never silently used.
    """
    data = build_bytes()
    sha = hashlib.sha256(data).hexdigest()
    target_dir = cache_dir() if directory is None else Path(directory)
    path = target_dir / f"agent-{sha[:16]}.pyz"
    problem = private_dir_problem(str(target_dir))
    if problem is not None:
        raise StoreError(f"{target_dir}: refusing this agent cache dir: {problem}")
    if verified_file(str(path), sha):
        return path, sha
    try:
        install_file(str(target_dir), path.name, data)
    except OSError as exc:
        raise StoreError(f"{target_dir}: cannot write the agent zipapp: {exc}") from exc
    return path, sha
