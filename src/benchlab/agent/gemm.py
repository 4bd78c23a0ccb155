"""`agent gemm`: the device's practical peak compute, a float32 matrix multiply in numpy.

Prefill is bound by compute (ARCHITECTURE.md, "How close to the hardware"), so MFU needs a
peak FLOP/s figure. A GPU's comes from its spec sheet; a CPU's theoretical peak depends on
vector width, FMA units and clocks no portable file states, and nothing runs at it. What a
CPU run of the reference decoder is bound by is the BLAS numpy calls, so the figure here is
that BLAS's float32 GEMM rate: the same library, the same threads, its steady state.

numpy is imported inside `measure`, never at module level: the agent runs where numpy is
absent (a bare board), and there the verb answers "not available" rather than a figure.
A square multiply of n x n costs 2 n**3 FLOPs. One multiply at n=1024 warms the BLAS up
(its threads, its packing buffers) and says how fast the machine is: a machine that does it
in under FAST_WARMUP_S gets n=2048, whose blocks reach the BLAS's steady state on a big box;
a slow one keeps n=1024, so the probe takes about a second either way. The figure is the
best of the repeats: interference only ever slows a multiply down.
"""

from __future__ import annotations

import os
import time
from typing import Any

SMALL_N = 1024
LARGE_N = 2048
MAX_N = 8192
"""The largest n a caller may ask for: 3 x 256 MiB of float32, a few minutes on a slow CPU."""
FAST_WARMUP_S = 0.05
"""A warm-up multiply at SMALL_N faster than this (above ~43 GFLOP/s) moves the probe to
LARGE_N."""
REPEATS = 5
MAX_REPEATS = 50
TIME_BUDGET_S = 2.0
"""The probe stops repeating once this much time has gone (after at least one repeat)."""


class NotAvailable(Exception):
    """The device cannot run the probe (no numpy): the controller records no figure."""


def _blas_name(np: Any) -> str | None:
    """The BLAS numpy was built against (`scipy-openblas 0.3.31`, `accelerate`), where
    numpy's build configuration says; None where it does not (numpy < 1.25)."""
    try:
        config = np.show_config(mode="dicts")
        blas = config["Build Dependencies"]["blas"]
    except Exception:
        return None
    name = blas.get("name") if isinstance(blas, dict) else None
    if not name:
        return None
    version = blas.get("version")
    return f"{name} {version}" if version and version != "unknown" else str(name)


def blas_threads() -> int:
    """How many threads the BLAS uses: the first of the usual variables that is set, else
    the CPUs this process may run on (OpenBLAS, MKL and BLIS default to those)."""
    for name in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS", "OMP_NUM_THREADS"):
        value = os.environ.get(name, "").split(",")[0].strip()
        if value.isdigit() and int(value) > 0:
            return int(value)
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _time_one(np: Any, a: Any, b: Any, out: Any) -> float:
    started = time.perf_counter()
    np.matmul(a, b, out=out)
    return time.perf_counter() - started


def measure(*, n: int | None = None, repeats: int = REPEATS) -> dict[str, Any]:
    """The float32 GEMM rate in TFLOP/s (10**12 FLOPs a second), best of `repeats`, with
    what it ran so a reader can judge it. Raises NotAvailable without numpy."""
    try:
        import numpy as np
    except ImportError as exc:
        raise NotAvailable("not available: numpy is not installed") from exc
    rng = np.random.default_rng(0)
    small = rng.standard_normal((SMALL_N, SMALL_N), dtype=np.float32)
    out_small = np.empty_like(small)
    warmup = _time_one(np, small, small, out_small)
    size = n or (LARGE_N if warmup < FAST_WARMUP_S else SMALL_N)
    if size == SMALL_N:
        a, b, out = small, small.T.copy(), out_small
    else:
        a = rng.standard_normal((size, size), dtype=np.float32)
        b = rng.standard_normal((size, size), dtype=np.float32)
        out = np.empty_like(a)
        _time_one(np, a, b, out)  # warm-up at this size: the BLAS's buffers for it
    best = None
    done = 0
    deadline = time.monotonic() + TIME_BUDGET_S
    while done < max(1, repeats) and (done == 0 or time.monotonic() < deadline):
        seconds = _time_one(np, a, b, out)
        done += 1
        if seconds > 0 and (best is None or seconds < best):
            best = seconds
    if best is None:
        raise RuntimeError("gemm: no repeat took measurable time")
    blas = _blas_name(np)
    method = f"numpy float32 CPU GEMM n={size}, best of {done}"
    if blas:
        method += f", {blas.split()[0][:16]}"
    return {
        "tflops": round(2.0 * size**3 / best / 1e12, 4),
        "method": method,
        "blas": blas,
        "n": size,
        "repeats": done,
        "threads": blas_threads(),
    }
