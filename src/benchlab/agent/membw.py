"""`agent membw`: the device's memory bandwidth, measured with nothing but the stdlib.

Decode speed is bound by memory bandwidth (ARCHITECTURE.md, "How close to the hardware"),
so every device needs a figure, and the agent must run where numpy and a compiler are
absent (a 2 GB board). The probe is a STREAM-style copy: `ctypes.memmove` of one buffer
into another, one slice per thread. ctypes releases the GIL for the duration of the C call,
so the threads copy in parallel and Python's own overhead is one call per slice. A copy
moves each byte twice (read and write), which is how STREAM counts its Copy kernel.

The working set is four times the last-level cache (at least 64 MiB) so the copy runs from
memory, not cache, and at most a quarter of the memory available now, so the probe never
pushes the device into swap. The figure is the best of several repeats: interference only
ever slows a copy down.
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
from typing import Any

from benchlab.agent.readfile import read_text

MIN_WORKING_SET = 64 << 20
DEFAULT_LLC = 32 << 20
REPEATS = 7
TIME_BUDGET_S = 20.0
"""The probe stops repeating once this much time has gone, whatever REPEATS says."""


def _read_small(path: str) -> str | None:
    """A sysfs or procfs text file, or None: the agent's guarded reader (regular files
    only, never blocking, capped)."""
    return read_text(path, cap=1 << 16)


def _size_bytes(text: str) -> int | None:
    """`32768K`, `8M` (sysfs cache sizes) as bytes."""
    text = text.strip().upper()
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    digits = text[:-1] if text[-1:] in ("K", "M", "G") else text
    return int(digits) * scale if digits.isdigit() else None


def last_level_cache() -> int | None:
    """The largest cache of cpu0 in bytes (sysfs), or None where the system does not say."""
    largest = None
    for index in range(8):
        text = _read_small(f"/sys/devices/system/cpu/cpu0/cache/index{index}/size")
        if text is None:
            break
        size = _size_bytes(text)
        if size is not None and (largest is None or size > largest):
            largest = size
    return largest


def available_memory() -> int | None:
    """MemAvailable from /proc/meminfo in bytes, or None."""
    for line in (_read_small("/proc/meminfo") or "").splitlines():
        if line.startswith("MemAvailable:"):
            parts = line.split()
            if len(parts) >= 2 and parts[1].isdigit():
                return int(parts[1]) << 10
    return None


def working_set(llc: int | None, available: int | None) -> int:
    """Bytes per buffer: 4 x LLC, at least MIN_WORKING_SET, both buffers within a quarter
    of the available memory (never under 16 MiB: below that the figure means nothing)."""
    size = max(4 * (llc or DEFAULT_LLC), MIN_WORKING_SET)
    if available is not None:
        size = min(size, available // 8)
    return max(size, 16 << 20)


def _copy_once(src: Any, dst: Any, size: int, threads: int) -> tuple[float, int]:
    """Seconds for `threads` threads to each memmove one slice of src into dst, and the
    bytes copied."""
    step = size // threads
    base_src, base_dst = ctypes.addressof(src), ctypes.addressof(dst)
    barrier = threading.Barrier(threads + 1)

    def worker(index: int) -> None:
        barrier.wait()
        ctypes.memmove(base_dst + index * step, base_src + index * step, step)

    workers = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for thread in workers:
        thread.start()
    started = time.perf_counter()
    barrier.wait()
    for thread in workers:
        thread.join()
    return time.perf_counter() - started, step * threads


def measure(
    *, size: int | None = None, threads: int | None = None, repeats: int = REPEATS
) -> dict[str, Any]:
    """The copy bandwidth in GB/s (10**9 bytes, as STREAM and spec sheets count), best of
    `repeats`, with what it ran so a reader can judge it."""
    nbytes = size or working_set(last_level_cache(), available_memory())
    nthreads = max(1, threads or os.cpu_count() or 1)
    src = (ctypes.c_char * nbytes)()
    dst = (ctypes.c_char * nbytes)()
    ctypes.memset(src, 1, nbytes)  # touch every page before timing
    ctypes.memset(dst, 0, nbytes)
    best = None
    done = 0
    deadline = time.monotonic() + TIME_BUDGET_S
    while done < max(1, repeats) and (done == 0 or time.monotonic() < deadline):
        seconds, moved = _copy_once(src, dst, nbytes, nthreads)
        done += 1
        rate = 2 * moved / seconds / 1e9 if seconds > 0 else None
        if rate is not None and (best is None or rate > best):
            best = rate
    if best is None:
        raise RuntimeError("membw: no repeat took measurable time")
    return {
        "gbs": round(best, 2),
        "method": "stdlib-memmove-copy",
        "working_set_mib": nbytes >> 20,
        "threads": nthreads,
        "repeats": done,
    }
