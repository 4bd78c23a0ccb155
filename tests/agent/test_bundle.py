"""The agent zipapp: deterministic, content-addressed, reused, and standard library only."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

from benchlab.devices.bundle import agent_zipapp


def test_zipapp_is_deterministic_and_named_by_its_hash(tmp_path: Path):
    first, sha = agent_zipapp(tmp_path / "a")
    second, sha2 = agent_zipapp(tmp_path / "b")
    assert sha == sha2
    assert first.read_bytes() == second.read_bytes()
    assert hashlib.sha256(first.read_bytes()).hexdigest() == sha
    assert first.name == f"agent-{sha[:16]}.pyz"


def test_zipapp_is_reused_and_a_corrupt_copy_is_replaced(tmp_path: Path):
    path, sha = agent_zipapp(tmp_path)
    os.utime(path, (1, 1))
    assert agent_zipapp(tmp_path) == (path, sha)
    assert path.stat().st_mtime == 1  # not rewritten
    path.write_bytes(b"corrupt")
    assert agent_zipapp(tmp_path) == (path, sha)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == sha


def test_zipapp_default_cache_dir_honours_xdg(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    path, _ = agent_zipapp()
    assert path.parent == tmp_path / "xdg" / "benchlab"


def test_zipapp_holds_only_the_agent(zipapp: Path):
    with zipfile.ZipFile(zipapp) as archive:
        names = archive.namelist()
        assert names == sorted(names)
        assert all(info.date_time == (1980, 1, 1, 0, 0, 0) for info in archive.infolist())
    assert "__main__.py" in names and "benchlab/__init__.py" in names
    assert all(
        n in ("__main__.py", "benchlab/__init__.py") or n.startswith("benchlab/agent/")
        for n in names
    )
    assert "benchlab/agent/reference_bench.py" in names


def test_zipapp_runs_without_site_packages(zipapp: Path):
    """`python -S` hides site-packages: proof that the agent needs the stdlib only."""
    for verb in ("clock", "sysinfo"):
        done = subprocess.run(
            [sys.executable, "-S", str(zipapp), verb],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert isinstance(json.loads(done.stdout), dict)
    code = (
        "import sys, benchlab.agent.reference_bench as r; "
        "print(r.MODELS['tiny']['hidden'], 'numpy' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-S", "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(zipapp)},
        check=False,
    )
    assert done.stdout.split() == ["128", "False"], done.stderr
