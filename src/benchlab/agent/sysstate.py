"""`agent system`: is this machine quiet enough to measure on? (like `pyperf system show`)

A busy or power-saving machine gives numbers that swing between runs of one point, and
nothing in the numbers says why. This reads what decides that, cheaply, from /proc, /sys
and a few tools, and says in words what to change. Each fact is None where the machine does
not expose it: unknown is never "fine" and never 0.

Every path is read under a root (`BENCHLAB_SYSFS_ROOT`, default `/`) and every tool is
found on PATH, so tests describe a machine with a fake tree and fake tools.
"""

from __future__ import annotations

import glob
import os
import shutil
from typing import Any

from benchlab.agent.telemetry import number_or_none, read_file, run_exe

ROOT_ENV = "BENCHLAB_SYSFS_ROOT"
BUSY_LOAD_PER_CORE = 0.5
"""A machine whose 1-minute load is over half its cores (and at least 1.0) is busy: another
job competes with the benchmark for cores and caches."""
SWAP_WARN_MB = 64.0
"""Swap in use above this says memory is short: a run may page, and stall unpredictably."""
THROTTLE_DROP_PCT = 10.0
"""A fall of the sampled CPU frequency by more than this during a run counts as throttling."""
QUIET_GOVERNORS = ("performance",)
CPU = "sys/devices/system/cpu"

# get_throttled bits (Raspberry Pi firmware): now (0-3) and since boot (16-19).
THROTTLE_BITS = {
    0: "under-voltage",
    1: "arm frequency capped",
    2: "throttled",
    3: "soft temperature limit",
}


def root_dir(root: str | None = None) -> str:
    """The root every /proc and /sys path is read under."""
    return root if root is not None else os.environ.get(ROOT_ENV) or "/"


def _read(root: str, rel: str) -> str | None:
    text = read_file(os.path.join(root, rel))
    return None if text is None else text.strip()


def run_tool(argv: list[str], path: str | None = None) -> str | None:
    """stdout of a tool found on `path` (default PATH); None when absent or failing."""
    return run_exe(shutil.which(argv[0], path=path), argv[1:])


def cores(root: str) -> int | None:
    """Online CPUs from `cpu/online` ("0-3,6"): the same view the load average counts."""
    text = _read(root, f"{CPU}/online")
    if not text:
        return os.cpu_count() if root == "/" else None
    count = 0
    for part in text.split(","):
        low, _, high = part.partition("-")
        try:
            count += int(high or low) - int(low) + 1
        except ValueError:
            return None
    return count or None


def governors(root: str) -> list[str] | None:
    """The distinct scaling governors of the CPUs; None without cpufreq (VMs, containers)."""
    found = {
        value
        for path in glob.glob(os.path.join(root, CPU, "cpu[0-9]*", "cpufreq", "scaling_governor"))
        if (value := _read(root, path))
    }
    return sorted(found) or None


def boost(root: str) -> bool | None:
    """Turbo/boost on? From cpufreq/boost (acpi-cpufreq, amd) or intel_pstate/no_turbo."""
    value = _read(root, f"{CPU}/cpufreq/boost")
    if value in ("0", "1"):
        return value == "1"
    value = _read(root, f"{CPU}/intel_pstate/no_turbo")
    if value in ("0", "1"):
        return value == "0"
    return None


def load(root: str) -> list[float] | None:
    parts = (_read(root, "proc/loadavg") or "").split()
    values = [number_or_none(p) for p in parts[:3]]
    return [v for v in values if v is not None] if len(parts) >= 3 and None not in values else None


def swap_used_mb(root: str) -> float | None:
    fields: dict[str, float] = {}
    for line in (_read(root, "proc/meminfo") or "").splitlines():
        key, _, value = line.partition(":")
        number = number_or_none(value.split()[0]) if value.split() else None
        if number is not None:
            fields[key.strip()] = number
    if "SwapTotal" not in fields or "SwapFree" not in fields:
        return None
    return round((fields["SwapTotal"] - fields["SwapFree"]) / 1024.0, 1)


def pi_throttled(path: str | None = None) -> int | None:
    """`vcgencmd get_throttled` as a number (0x50005); None where there is no vcgencmd."""
    text = run_tool(["vcgencmd", "get_throttled"], path)
    if not text or "=" not in text:
        return None
    try:
        return int(text.strip().partition("=")[2], 16)
    except ValueError:
        return None


def throttle_words(bits: int) -> list[str]:
    return [word for bit, word in THROTTLE_BITS.items() if bits & (1 << bit)]


def snapshot(root: str | None = None, path: str | None = None) -> dict[str, Any]:
    """The state of the machine now (taken before a run and by `bench system`)."""
    base = root_dir(root)
    throttled = pi_throttled(path)
    return {
        "cores": cores(base),
        "governors": governors(base),
        "boost": boost(base),
        "load": load(base),
        "swap_used_mb": swap_used_mb(base),
        "pi_throttled": hex(throttled) if throttled is not None else None,
    }


def freq_drop_pct(freqs: list[float]) -> float | None:
    """The largest fall of the frequency from an earlier sample to a later one, in percent."""
    if len(freqs) < 2:
        return None
    peak = freqs[0]
    drop = 0.0
    for value in freqs[1:]:
        if peak > 0:
            drop = max(drop, (peak - value) / peak * 100.0)
        peak = max(peak, value)
    return round(drop, 1)


def throttling(
    samples: list[dict[str, Any]], before: int | None, after: int | None
) -> dict[str, Any]:
    """Did the machine throttle during a run? From the frequencies sampled while the task
    ran (the first and last samples bracket it, when the CPU may idle, so they are left
    out) and from the Pi firmware's sticky bits, set during the run or set now."""
    inside = [s.get("cpu_freq_mhz") for s in samples[1:-1]]
    drop = freq_drop_pct([f for f in inside if isinstance(f, (int, float))])
    reasons = []
    if drop is not None and drop > THROTTLE_DROP_PCT:
        reasons.append(f"CPU frequency fell {drop:g}% during the run")
    if after is not None:
        new_sticky = (after >> 16) & ~((before or 0) >> 16) & 0xF
        words = throttle_words((after & 0xF) | new_sticky)
        if words:
            reasons.append(f"firmware reports {', '.join(words)} (get_throttled={hex(after)})")
    known = drop is not None or after is not None
    return {
        "freq_drop_pct": drop,
        "throttled": bool(reasons) if known else None,
        "reasons": reasons,
    }


def advice(state: dict[str, Any]) -> list[dict[str, str]]:
    """What to change for stable numbers: [{"key", "message", "level"}]; level "warn" is
    what a sweep prints before it starts, "info" only `bench system` shows."""
    out: list[dict[str, str]] = []
    govs = state.get("governors") or []
    slow = [g for g in govs if g not in QUIET_GOVERNORS]
    if slow:
        out.append(
            {
                "key": "governor",
                "level": "warn" if "powersave" in slow else "info",
                "message": f"governor is {'/'.join(slow)}: set performance for stable numbers "
                "(`cpupower frequency-set -g performance`)",
            }
        )
    if state.get("boost"):
        out.append(
            {
                "key": "boost",
                "level": "info",
                "message": "turbo/boost is on: clocks follow temperature and load; turn it off "
                "for stable numbers, on for peak ones",
            }
        )
    out.extend(_load_advice(state))
    swap = state.get("swap_used_mb")
    if isinstance(swap, (int, float)) and swap > SWAP_WARN_MB:
        out.append(
            {
                "key": "swap",
                "level": "warn",
                "message": f"{swap:g} MB of swap in use: memory is short and a run may page",
            }
        )
    bits = state.get("pi_throttled")
    if bits:
        words = throttle_words(int(bits, 16))
        if words:
            out.append(
                {
                    "key": "throttled",
                    "level": "warn",
                    "message": f"the firmware reports {', '.join(words)} now "
                    f"(get_throttled={bits}): check the power supply and cooling",
                }
            )
    return out


def _load_advice(state: dict[str, Any]) -> list[dict[str, str]]:
    values = state.get("load")
    count = state.get("cores")
    if not values or not count:
        return []
    limit = max(1.0, BUSY_LOAD_PER_CORE * count)
    if values[0] <= limit:
        return []
    return [
        {
            "key": "load",
            "level": "warn",
            "message": f"load {values[0]:g} on {count} cores: the machine is busy; "
            "stop other jobs or numbers will swing",
        }
    ]
