"""Fixtures for the agent tests: the built zipapp and a way to run the agent for real."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import benchlab

SRC = Path(benchlab.__file__).resolve().parent.parent
AGENT_DIR = SRC / "benchlab" / "agent"

AgentRunner = Callable[..., tuple[int, Any, str]]


@pytest.fixture
def zipapp(tmp_path: Path) -> Path:
    from benchlab.devices.bundle import agent_zipapp

    path, _ = agent_zipapp(tmp_path / "cache")
    return path


@pytest.fixture(params=["module", "zipapp", "directory"])
def run_agent(request: pytest.FixtureRequest, zipapp: Path) -> AgentRunner:
    """Run one agent verb as a child process, the three ways a device can start it."""
    mode = request.param

    def run(
        verb: str, payload: Any = None, *, env: dict[str, str] | None = None, timeout: float = 60
    ) -> tuple[int, Any, str]:
        import os

        if mode == "module":
            argv = [sys.executable, "-m", "benchlab.agent", verb]
        elif mode == "zipapp":
            argv = [sys.executable, str(zipapp), verb]
        else:
            argv = [sys.executable, str(AGENT_DIR), verb]
        full_env = dict(os.environ)
        full_env.update(env or {})
        done = subprocess.run(
            argv,
            input="" if payload is None else json.dumps(payload),
            capture_output=True,
            text=True,
            timeout=timeout,
            env=full_env,
            check=False,
        )
        try:
            answer = json.loads(done.stdout)
        except ValueError:
            answer = None
        return done.returncode, answer, done.stderr

    run.mode = mode  # type: ignore[attr-defined]
    return run


@pytest.fixture
def broken_package(tmp_path: Path) -> Path:
    """A dir for PYTHONPATH holding `brokenpkg`, whose __init__ raises: find_spec cannot tell."""
    root = tmp_path / "pythonpath"
    (root / "brokenpkg").mkdir(parents=True)
    (root / "brokenpkg" / "__init__.py").write_text("raise RuntimeError('half-installed')\n")
    return root


@pytest.fixture
def failing_tool_path(tmp_path: Path) -> str:
    """A PATH whose nvidia-smi exists but fails, ahead of the real PATH."""
    import os

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "nvidia-smi"
    tool.write_text("#!/bin/sh\necho 'NVIDIA-SMI has failed: driver not loaded' >&2\nexit 9\n")
    tool.chmod(0o755)
    return f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
