"""`agent run`: one task in (AgentTask JSON), one envelope out (AgentEnvelope JSON).

The benchmark's own failure is a result, not an agent failure: a non-zero exit, a timeout or
a command that cannot start all come back inside the envelope with exit status 0 of the
agent itself. Only a malformed task makes the agent fail (and the controller see a
DeviceError). The task runs in its own process group so a timeout kills its children too.

Besides telemetry the envelope carries `resources` (the task's peak resident set, its peak
GPU memory, its energy) and `system` (the machine's state at the start: governor, boost,
load, swap; and whether it throttled during the run). The peak resident set is the one
the kernel reports for this very child when it is reaped (wait4): RUSAGE_CHILDREN would be
the max over every child the agent ever reaped (nvidia-smi included). A (v)forked child
counts its parent's pages until it execs (the kernel keeps the larger of the two peaks), so
a wait4 figure no larger than the agent's own peak says only "at most the agent's size":
there the VmHWM the sampler read from /proc/<pid>/status while the task ran (the exec'd
program's own) stands in. The agent's peak is read once the child is reaped, never before
the fork: the agent may grow while it starts the child, and the child inherits that too.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Any

from benchlab.agent import sysstate
from benchlab.agent.telemetry import Sampler, vm_hwm_mb

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


class _Popen(subprocess.Popen):  # type: ignore[type-arg]
    """A Popen that reaps its child with wait4, keeping the child's own rusage.

    `_try_wait` is the one place Popen.wait reaps on POSIX (3.3 to 3.13); where it is
    absent or never reached, `rusage` stays None and the sampled VmHWM is used instead."""

    rusage: Any = None

    def _try_wait(self, wait_flags: int) -> tuple[int, int]:
        if not hasattr(os, "wait4"):
            return super()._try_wait(wait_flags)  # type: ignore[misc,no-any-return]
        try:
            pid, status, usage = os.wait4(self.pid, wait_flags)
        except ChildProcessError:
            return self.pid, 0
        if pid == self.pid:
            self.rusage = usage
        return pid, status


def peak_rss_mb(
    rusage: Any, sampled_mb: float | None, own_mb: float | None = None
) -> tuple[float | None, str | None]:
    """(MiB, source) of the child's peak resident set; ru_maxrss is KiB on Linux and
    bytes on macOS. `own_mb`: the agent's own peak once the child is reaped; a wait4
    figure not above it may be the agent's pages, so the sampled VmHWM is used instead.
    (None, None) where neither could say."""
    if sampled_mb is not None and not sampled_mb > 0:
        sampled_mb = None  # a VmHWM of 0 is no reading: not measured, never 0 MiB
    maxrss = getattr(rusage, "ru_maxrss", None)
    if isinstance(maxrss, int) and maxrss > 0:
        scale = 2**20 if sys.platform == "darwin" else 2**10
        exact = round(maxrss / scale, 1)
        # Unrounded against the agent's peak (itself rounded to 0.01 MiB): rounded up to
        # 0.1 MiB the agent's own pages would pass for a child just above them.
        above_agent = own_mb is None or maxrss / scale > own_mb + 0.01
        if exact > 0 and (above_agent or sampled_mb is None):
            return exact, "wait4"
    if sampled_mb is not None:
        return sampled_mb, "VmHWM"
    return None, None


def resources(
    telemetry: dict[str, Any], rusage: Any, sampled_mb: float | None, own_mb: float | None
) -> dict[str, Any]:
    """What the task used: absent keys are not measured (never 0)."""
    out: dict[str, Any] = {}
    peak, source = peak_rss_mb(rusage, sampled_mb, own_mb)
    if peak is not None:
        out.update(peak_rss_mb=peak, peak_rss_source=source)
    gpu = telemetry.get("gpu_mem_mb")
    if isinstance(gpu, dict) and gpu.get("max") is not None:
        out.update(gpu_mem_peak_mb=gpu["max"], gpu_mem_start_mb=gpu.get("min"))
    spent = telemetry.get("energy")
    if isinstance(spent, dict) and spent.get("total_j") is not None:
        out.update(energy_j=spent["total_j"], energy_sources=spent.get("sources"))
    return out


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
    state = sysstate.snapshot()
    envelope: dict[str, Any] = {
        "argv": argv,
        "exit_code": None,
        "timed_out": False,
        "stdout": "",
        "stderr": "",
    }
    process: _Popen | None = None
    sampler.start()
    started_at = time.time()
    try:
        try:
            process = _Popen(
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
            sampler.watch(process.pid)
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
    own_mb = vm_hwm_mb(os.getpid())  # a high-water mark: at least what the child inherited
    rusage = process.rusage if process is not None else None
    after = sysstate.pi_throttled() if state.get("pi_throttled") is not None else None
    before = int(state["pi_throttled"], 16) if state.get("pi_throttled") else None
    state["during_run"] = sysstate.throttling(telemetry.get("samples") or [], before, after)
    envelope.update(
        started_at=started_at,
        finished_at=finished_at,
        telemetry=telemetry,
        resources=resources(telemetry, rusage, sampler.hwm_mb, own_mb),
        system=state,
    )
    return envelope
