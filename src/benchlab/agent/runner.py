"""`agent run`: one task in (AgentTask JSON), one envelope out (AgentEnvelope JSON).

The benchmark's own failure is a result, not an agent failure: a non-zero exit, a timeout or
a command that cannot start all come back inside the envelope with exit status 0 of the
agent itself. Only a malformed task makes the agent fail (and the controller see a
DeviceError). The task runs in its own process group so a timeout kills its children too.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from typing import Any

from benchlab.agent.telemetry import Sampler

CANNOT_START_EXIT = 127


class TaskError(Exception):
    """The agent cannot run what it was given (a malformed task, one that will not die).

    The verbs layer turns it into its own AgentFailure; the runner never imports the verbs,
    so the two modules do not depend on each other in a circle."""


def expand(value: str, *, python: str, agent: str) -> str:
    return value.replace("{python}", python).replace("{agent}", agent)


def _validate(task: dict[str, Any]) -> None:
    argv = task.get("argv")
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        raise TaskError("run: task.argv must be a non-empty list of strings")
    env = task.get("env") or {}
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise TaskError("run: task.env must map names to strings")
    for key in ("timeout_s", "sample_interval_s"):
        value = task.get(key)
        if value is not None and (not isinstance(value, (int, float)) or value <= 0):
            raise TaskError(f"run: task.{key} must be a positive number")


def _kill_group(process: subprocess.Popen[str]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, AttributeError):
        process.kill()


def run_task(task: dict[str, Any], *, python: str, agent: str) -> dict[str, Any]:
    """Run `task` with telemetry; return the envelope (stamps are device UNIX seconds)."""
    _validate(task)
    argv = [expand(a, python=python, agent=agent) for a in task["argv"]]
    env = dict(os.environ)
    env.update(
        {k: expand(v, python=python, agent=agent) for k, v in (task.get("env") or {}).items()}
    )
    cwd = task.get("cwd") or None
    timeout = float(task.get("timeout_s") or 3600.0)
    stdin_text = task.get("stdin")
    sampler = Sampler(float(task.get("sample_interval_s") or 0.5))
    envelope: dict[str, Any] = {
        "argv": argv,
        "exit_code": None,
        "timed_out": False,
        "stdout": "",
        "stderr": "",
    }
    sampler.start()
    started_at = time.time()
    try:
        try:
            process = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE if stdin_text is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                cwd=cwd,
                text=True,
                errors="replace",
                start_new_session=True,
            )
        except OSError as exc:
            envelope["exit_code"] = CANNOT_START_EXIT
            envelope["error"] = f"cannot start {argv[0]!r}: {exc.strerror or exc}"
            envelope["stderr"] = envelope["error"] + "\n"
        else:
            try:
                out, err = process.communicate(stdin_text, timeout=timeout)
            except subprocess.TimeoutExpired:
                envelope["timed_out"] = True
                _kill_group(process)
                try:
                    out, err = process.communicate(timeout=10)
                except subprocess.TimeoutExpired as exc:
                    raise TaskError(f"run: task did not die after SIGKILL: {argv[0]}") from exc
            envelope.update(exit_code=process.returncode, stdout=out or "", stderr=err or "")
    finally:
        finished_at = time.time()
        telemetry = sampler.stop()
    envelope.update(started_at=started_at, finished_at=finished_at, telemetry=telemetry)
    return envelope
