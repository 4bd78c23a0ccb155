"""One agent process on this machine (the local transport, or an exec prefix tool).

The process gets a session of its own, so a timeout kills everything it started (a stuck
benchmark's children too), and every way it can fail to start or answer is a DeviceError:
from the controller's side the agent never answered.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from benchlab.errors import DeviceError


@dataclass(frozen=True)
class Finished:
    returncode: int
    out: str
    err: str


def tail(text: str, limit: int = 300) -> str:
    """The last non-empty line of an output, shortened: the line that says what went wrong."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return (lines[-1] if lines else "")[:limit]


def run_agent_process(
    argv: Sequence[str],
    data: bytes,
    *,
    timeout: float,
    where: str,
    device_id: str,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    what: str = "",
) -> Finished:
    """Run `argv` with `data` on stdin; `what` names argv[0] in errors ("interpreter ")."""
    try:
        process = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=None if env is None else dict(env),
            cwd=cwd,
            start_new_session=True,
        )
    except OSError as exc:
        raise DeviceError(
            f"{where}: cannot start {what}{argv[0]!r}: {exc.strerror or exc}", device_id
        ) from exc
    try:
        out, err = process.communicate(data, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            process.kill()
        process.communicate()
        raise DeviceError(f"{where}: no answer within {timeout:g} s (killed)", device_id) from exc
    return Finished(
        process.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
    )
