"""`agent sysinfo`: what this device is, read cheaply from /proc, /sys and a few tools.

Every probe is independent and bounded: a probe that finds nothing answers None, a probe
whose tool fails answers an `error` field ("I could not look" is not "none"). Nothing here
takes more than a few seconds even when a tool hangs (every subprocess has a timeout).
"""

from __future__ import annotations

import math
import os
import platform
import shutil
import subprocess
from typing import Any

from benchlab.agent.readfile import read_text

TOOL_TIMEOUT_S = 10.0
MAX_GPU_MIB = 2**30
"""A GPU's memory a tool may report (1 PiB, in MiB); past it the tool is broken or fake."""


def _read(path: str) -> str | None:
    return read_text(path)


def _tool(argv: list[str]) -> str:
    """stdout of a short tool run; raises RuntimeError with a one-line reason on failure."""
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise RuntimeError(f"{argv[0]}: {exc}") from exc
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or [""]
        raise RuntimeError(f"{argv[0]} exited {done.returncode}: {tail[0][:200]}")
    return done.stdout


def _cpuinfo_fields() -> list[dict[str, str]]:
    text = _read("/proc/cpuinfo") or ""
    blocks: list[dict[str, str]] = []
    for block in text.split("\n\n"):
        fields = {}
        for line in block.splitlines():
            key, sep, value = line.partition(":")
            if sep:
                fields[key.strip()] = value.strip()
        if fields:
            blocks.append(fields)
    return blocks


def _float(text: str | None, scale: float = 1.0) -> float | None:
    """A finite number times `scale`, or None (a tool's `nan` or `inf` is no reading)."""
    try:
        value = float(str(text).strip()) * scale
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def cpu_info() -> dict[str, Any]:
    blocks = _cpuinfo_fields()
    first = blocks[0] if blocks else {}
    model = (
        first.get("model name")
        or first.get("Model")
        or first.get("Hardware")
        or first.get("cpu model")
        or platform.processor()
        or None
    )
    if model is None and platform.system() == "Darwin":
        try:
            model = _tool(["sysctl", "-n", "machdep.cpu.brand_string"]).strip() or None
        except RuntimeError:
            model = None
    physical = {
        (b.get("physical id", "0"), b.get("core id"))
        for b in blocks
        if b.get("core id") is not None
    }
    base = _float(_read("/sys/devices/system/cpu/cpu0/cpufreq/base_frequency"), 1e-3)
    maximum = _float(_read("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq"), 1e-3)
    # A core whose `cpu MHz` does not parse (or reads nan) gives no reading, as in `_float`.
    readings = [_float(b.get("cpu MHz")) for b in blocks if b.get("cpu MHz")]
    current = [mhz for mhz in readings if mhz is not None]
    try:
        affinity: int | None = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        affinity = None
    return {
        "model": model,
        "architecture": platform.machine() or None,
        "cores_logical": os.cpu_count(),
        "cores_physical": len(physical) or None,
        "cores_usable": affinity,
        "frequency_base_mhz": base,
        "frequency_max_mhz": maximum,
        "frequency_current_mhz": round(sum(current) / len(current), 1) if current else None,
    }


def memory_info() -> dict[str, Any]:
    fields: dict[str, float] = {}
    for line in (_read("/proc/meminfo") or "").splitlines():
        key, _, value = line.partition(":")
        parts = value.split()
        if parts and parts[0].isdigit():
            fields[key] = int(parts[0]) * 1024.0
    total = fields.get("MemTotal")
    if total is None:
        try:
            total = float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
        except (AttributeError, ValueError, OSError):
            total = None
    return {
        "total_bytes": int(total) if total else None,
        "available_bytes": int(fields["MemAvailable"]) if "MemAvailable" in fields else None,
        "ram_gb": round(total / 2**30, 2) if total else None,
    }


def os_info() -> dict[str, Any]:
    name = platform.system()
    version = platform.release()
    release: dict[str, str] = {}
    for line in (_read("/etc/os-release") or "").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            release[key] = value.strip().strip('"')
    return {
        "name": release.get("PRETTY_NAME") or name,
        "system": name,
        # The distribution's own version where it says one; the kernel has its own field.
        "version": release.get("VERSION_ID")
        or (platform.version() if name != "Linux" else version),
        "kernel": f"{name} {version}".strip(),
        "in_wsl": "microsoft" in version.lower(),
    }


def cgroup_cpu_quota() -> dict[str, Any]:
    """The effective CPU quota in cores (None = unlimited), from cgroup v2 or v1."""
    out: dict[str, Any] = {"version": None, "quota_cores": None, "raw": None}
    text = _read("/proc/self/cgroup")
    if text is None:
        return out
    v2_path = v1_path = None
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0" and parts[1] == "":
            v2_path = parts[2]
        elif "cpu" in parts[1].split(","):
            v1_path = parts[2]
    if v1_path is not None:
        for base in ("/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpu"):
            for rel in (v1_path.lstrip("/"), ""):
                quota = _read(os.path.join(base, rel, "cpu.cfs_quota_us"))
                period = _read(os.path.join(base, rel, "cpu.cfs_period_us"))
                if quota is not None and period is not None:
                    out.update(version=1, raw=f"{quota.strip()} {period.strip()}")
                    q, p = _float(quota), _float(period)
                    if q is not None and p and q > 0:
                        out["quota_cores"] = round(q / p, 3)
                    return out
    if v2_path is not None:
        rel = v2_path.lstrip("/")
        for candidate in (rel, ""):
            raw = _read(os.path.join("/sys/fs/cgroup", candidate, "cpu.max"))
            if raw is not None:
                out.update(version=2, raw=raw.strip())
                quota, _, period = raw.strip().partition(" ")
                q, p = _float(quota), _float(period or "100000")
                if quota != "max" and q is not None and p:
                    out["quota_cores"] = round(q / p, 3)
                return out
    return out


def storage_info(path: str = "/") -> dict[str, Any]:
    out: dict[str, Any] = {"type": None, "size_gb": None, "device": None}
    try:
        stat = os.statvfs(path)
        out["size_gb"] = round(stat.f_blocks * stat.f_frsize / 1e9, 1)
    except (AttributeError, OSError):
        return out
    device = None
    for line in (_read("/proc/mounts") or "").splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[1] == path:
            device = parts[0]
    if device is None or not device.startswith("/dev/"):
        return out
    name = os.path.basename(os.path.realpath(device))
    out["device"] = name
    block = os.path.realpath(os.path.join("/sys/class/block", name))
    rotational = _read(os.path.join(block, "queue", "rotational"))
    if rotational is None:
        rotational = _read(os.path.join(os.path.dirname(block), "queue", "rotational"))
    if rotational is not None:
        if rotational.strip() == "1":
            out["type"] = "HDD"
        elif name.startswith("nvme"):
            out["type"] = "NVMe SSD"
        elif name.startswith(("vd", "xvd")):
            out["type"] = "virtual disk"
        elif name.startswith("mmcblk"):
            out["type"] = "SD/eMMC"
        else:
            out["type"] = "SSD"
    return out


def nvidia_gpus() -> list[dict[str, Any]]:
    fields = "name,memory.total,driver_version,compute_cap"
    try:
        text = _tool(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader,nounits"])
    except RuntimeError:
        fields = "name,memory.total,driver_version"
        text = _tool(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader,nounits"])
    gpus = []
    for line in text.strip().splitlines():
        cols = [c.strip() for c in line.split(",")]
        memory = _float(cols[1]) if len(cols) > 1 else None
        if memory is not None and not 0 < memory <= MAX_GPU_MIB:
            memory = None  # 1e20 MiB is no GPU's: not measured
        gpus.append(
            {
                "vendor": "nvidia",
                "model": cols[0],
                "memory_gb": round(memory / 1024, 1) if memory is not None else None,
                "driver_version": cols[2] if len(cols) > 2 else None,
                "compute_capability": cols[3] if len(cols) > 3 else None,
            }
        )
    return gpus


def rocm_gpus() -> list[dict[str, Any]]:
    import json

    data = json.loads(_tool(["rocm-smi", "--showproductname", "--json"]) or "{}")
    gpus = []
    for key, card in sorted(data.items()):
        if not key.startswith("card") or not isinstance(card, dict):
            continue
        model = card.get("Card series") or card.get("Card model") or card.get("Card SKU") or key
        gpus.append({"vendor": "amd", "model": str(model)})
    return gpus


def gpu_info() -> dict[str, Any]:
    """GPUs from nvidia-smi / rocm-smi. No tool: []. A failing tool: an error, gpus None."""
    gpus: list[dict[str, Any]] = []
    errors: list[str] = []
    for tool, probe in (("nvidia-smi", nvidia_gpus), ("rocm-smi", rocm_gpus)):
        if shutil.which(tool) is None:
            continue
        try:
            gpus.extend(probe())
        except (RuntimeError, ValueError) as exc:
            errors.append(f"{tool}: {exc}")
    return {"gpus": gpus if gpus or not errors else None, "gpu_error": "; ".join(errors) or None}


def runtimes(gpus: list[dict[str, Any]] | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "python_version": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "go_version": None,
        "cuda_driver_version": None,
    }
    if shutil.which("go"):
        try:
            text = _tool(["go", "version"]).strip()
            out["go_version"] = text.removeprefix("go version ") or None
        except RuntimeError as exc:
            out["go_error"] = str(exc)
    for gpu in gpus or []:
        if gpu.get("vendor") == "nvidia" and gpu.get("driver_version"):
            out["cuda_driver_version"] = gpu["driver_version"]
            break
    return out


def collect() -> dict[str, Any]:
    """Everything the controller records about a device (private: includes the hostname)."""
    gpu = gpu_info()
    return {
        "hostname": platform.node() or None,
        "cpu": cpu_info(),
        "memory": memory_info(),
        "os": os_info(),
        "runtimes": runtimes(gpu["gpus"]),
        "gpus": gpu["gpus"],
        "gpu_error": gpu["gpu_error"],
        "cgroup": cgroup_cpu_quota(),
        "storage": storage_info(),
    }
