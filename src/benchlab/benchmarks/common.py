"""Helpers every backend shares: the availability probe, the envelope check, thread env."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

from benchlab.devices.base import Transport
from benchlab.errors import ConfigError, DeviceError, MeasurementError, ParseError, StoreError
from benchlab.files import SMALL_CAP, read_text
from benchlab.models import AgentEnvelope, RunSpec

EXISTS_TIMEOUT_S = 60.0
THREAD_ENV_VARS = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)


def require(device: Transport, kind: str, name: str, backend: str) -> None:
    """ConfigError when the device says no; DeviceError when it cannot be asked."""
    answer = device.call("exists", {"kind": kind, "name": name}, timeout=EXISTS_TIMEOUT_S)
    found = answer.get("exists") if isinstance(answer, dict) else None
    if not isinstance(found, bool):
        raise DeviceError(
            f"device {device.device_id!r}: agent exists answered {answer!r}, not a yes or no",
            device.device_id,
        )
    if not found:
        what = "Python module" if kind == "module" else "binary"
        where = "for the agent's interpreter" if kind == "module" else "on PATH"
        raise ConfigError(
            f"device {device.device_id!r}: backend {backend!r} needs the {what} {name!r}, "
            f"which is not installed {where}"
        )


def thread_env(threads: int | None) -> dict[str, str]:
    """Pin the BLAS/OpenMP thread pools to spec.threads (must be set before numpy loads)."""
    if threads is None:
        return {}
    return {name: str(threads) for name in THREAD_ENV_VARS}


def tail(text: str, lines: int = 3, limit: int = 400) -> str:
    kept = " | ".join(line.strip() for line in text.strip().splitlines()[-lines:])
    return kept[-limit:]


def check_finished(envelope: AgentEnvelope, spec: RunSpec, run_id: str, backend: str) -> None:
    """MeasurementError when the run happened and said no (non-zero exit, timeout).

    A result, not a hole: the Runner classifies it `measurement` and does not retry it.
    """
    where = f"{run_id}: {backend}"
    if envelope.timed_out:
        raise MeasurementError(f"{where}: timed out on device {spec.device!r}")
    if envelope.exit_code != 0:
        reason = tail(envelope.stderr) or tail(envelope.stdout) or "no output"
        code = envelope.exit_code
        how = exit_text(code) if exit_signal(code) else f"exited {code}"
        raise MeasurementError(f"{where}: {how} on {spec.device!r}: {reason}")


CRASH_SIGNALS = frozenset({signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE})
"""Signals a program gets for its own bug or a CPU it was not built for: a crash, not a
kill from outside (SIGKILL, SIGTERM), so the backend may know the likely cause."""


def exit_signal(code: int | None) -> signal.Signals | None:
    """The signal that ended the benchmark: a negative status (the agent's child), or
    128 + N (a shell between the agent and the program reports a crashed child so)."""
    if code is None or code == 0:
        return None
    number = -code if code < 0 else code - 128 if 128 < code < 128 + 65 else 0
    try:
        return signal.Signals(number) if number else None
    except ValueError:
        return None


def exit_text(code: int | None) -> str:
    """How the benchmark ended, by name: "crashed with SIGSEGV (signal 11)" rather than
    "status -11", which few readers decode."""
    sig = exit_signal(code)
    if sig is None:
        return f"exited with status {code}"
    verb = "crashed with" if sig in CRASH_SIGNALS else "was killed by"
    if code is not None and code > 0:
        return f"exited with status {code} (128 + {sig.value}: {verb} {sig.name}, by a shell)"
    return f"{verb} {sig.name} (signal {sig.value})"


def local_cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str]:
    """This machine's CPU feature flags (`flags` of /proc/cpuinfo; none where it has no
    such file, as on macOS). Read only when a local benchmark crashed: never per run."""
    try:
        text = read_text(cpuinfo, errors="replace", cap=SMALL_CAP * 4)
    except StoreError:
        return frozenset()
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() in ("flags", "Features"):
            return frozenset(value.split())
    return frozenset()


def param(spec: RunSpec, key: str, default: Any) -> Any:
    value = spec.params.get(key)
    return default if value is None else value


def batch_curve(points: list[dict[str, float]]) -> dict[str, Any]:
    """baseline (batch 1), points with speedups, and the peak, from (batch, agg, per-user).

    `points` items: {"batch": int, "agg_tok_per_sec": float, "per_user_ms_per_tok": float}.
    """
    ordered = sorted(points, key=lambda p: p["batch"])
    base = next((p for p in ordered if p["batch"] == 1), None)
    base_tps = base["agg_tok_per_sec"] if base else None
    out_points: list[dict[str, Any]] = []
    for p in ordered:
        speedup = p["agg_tok_per_sec"] / base_tps if base_tps else None
        out_points.append({**p, "speedup_vs_baseline": speedup})
    peak = max(out_points, key=lambda p: p["agg_tok_per_sec"]) if out_points else None
    return {
        "baseline": {"batch": 1, "tok_per_sec": base_tps} if base_tps else None,
        "peak": (
            {
                "batch": peak["batch"],
                "agg_tok_per_sec": peak["agg_tok_per_sec"],
                "speedup_vs_baseline": peak["speedup_vs_baseline"],
            }
            if peak
            else None
        ),
        "points": out_points,
    }


def finite_metrics(metrics: dict[str, Any], where: str) -> dict[str, float | None]:
    """Metrics as floats; ParseError for NaN, infinity or a non-number."""
    import math

    out: dict[str, float | None] = {}
    for key, value in metrics.items():
        if value is None:
            out[key] = None
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ParseError(f"{where}: metric {key!r} is not a number: {value!r}")
        if not math.isfinite(value):
            raise ParseError(f"{where}: metric {key!r} is not finite: {value!r}")
        out[key] = float(value)
    return out
