"""The agent zipapp: the benchlab.agent package as one deterministic .pyz, named by its hash.

Deterministic (fixed timestamps and modes, sorted entries, stored not deflated), so the same
sources always give the same bytes and the same sha256: a remote transport pushes the file
once per hash and every later sweep finds it already there. Only the agent package goes in,
plus a stub `benchlab/__init__.py`, so the device never imports anything but the stdlib.

Usage::

    path, sha = agent_zipapp()
    subprocess.run([sys.executable, str(path), "clock"])
"""

from __future__ import annotations

import hashlib
import io
import os
import tempfile
import zipfile
from pathlib import Path

import benchlab.agent

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


def cache_dir() -> Path:
    """$XDG_CACHE_HOME/benchlab, else ~/.cache/benchlab."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "benchlab"


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
    """Build (once per content hash) the agent zipapp; return (path, sha256 hex)."""
    data = build_bytes()
    sha = hashlib.sha256(data).hexdigest()
    target_dir = cache_dir() if directory is None else Path(directory)
    path = target_dir / f"agent-{sha[:16]}.pyz"
    try:
        if path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == sha:
            return path, sha
        target_dir.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target_dir, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(tmp, 0o755)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        from benchlab.errors import StoreError

        raise StoreError(f"{target_dir}: cannot write the agent zipapp: {exc}") from exc
    return path, sha
