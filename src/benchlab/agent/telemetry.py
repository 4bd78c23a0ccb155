"""Telemetry sampled on the device while a task runs: temperature, CPU frequency, load, power.

A background thread samples every `interval_s` until the task ends; one sample is always
taken at the start and one at the end, so even a short run has two. Each channel is None
where this device does not expose it (no thermal zones in a container, RAPL counters that
only root may read, no nvidia-smi). The summary is min/median/max per channel plus the
samples themselves, so nothing is thrown away.

Energy comes from the counters a device has: RAPL's package counters (summed per interval,
so a counter that wraps at `max_energy_range_uj` still adds up), and power integrated over
the samples for nvidia-smi, rocm-smi and a Raspberry Pi 5's PMIC (`vcgencmd
pmic_read_adc`). A device with none has no energy at all (None), never 0 J.

/sys and /proc are read under `BENCHLAB_SYSFS_ROOT` and tools are found on PATH, so tests
give the sampler a fake machine.
"""

from __future__ import annotations

import glob
import math
import os
import shutil
import subprocess
import threading
import time
from typing import Any

from benchlab.agent.readfile import read_text

CHANNELS = (
    "temperature_c",
    "cpu_freq_mhz",
    "load_1m",
    "power_w",
    "gpu_power_w",
    "gpu_temperature_c",
    "gpu_mem_mb",
    "pmic_power_w",
)
INTEGRATED = {"gpu_j": "gpu_power_w", "pmic_j": "pmic_power_w"}
"""Energy integrated from a sampled power channel (the trapezoid rule over t_s)."""
TOOL_TIMEOUT_S = 5.0
RSS_POLL_S = 0.02
"""How often the task's VmHWM is read (a /proc read of ~20 us: 0.1% of a core)."""


def read_file(path: str) -> str | None:
    return read_text(path, "ascii")


MAX_READING = 1e12
"""The largest reading a channel keeps: the catalog's bound on a metric. A tool that prints
more (a fake or broken nvidia-smi's 1e20 MiB) has not measured anything; that reading is
not measured (None) and named in the summary's `refused`, never published."""


def number_or_none(text: str | None) -> float | None:
    """A finite number, or None: `nan` or `inf` from a tool or a sysfs file is not a reading
    (float() parses both, and JSON cannot carry them)."""
    try:
        value = float(str(text).strip())
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _reading(text: str, refused: dict[str, str], channel: str) -> float | None:
    """A tool's reading for `channel`, None where it printed no number; a non-finite,
    negative or implausibly large one is None too, its text kept in `refused`."""
    value = number_or_none(text)
    word = text.strip()
    if value is not None and 0 <= value <= MAX_READING:
        return value
    if value is not None or word.lower().lstrip("+-") in ("nan", "inf", "infinity"):
        refused[channel] = word[:32]
    return None


def run_exe(exe: str | None, args: list[str]) -> str | None:
    """stdout of a tool; None when absent, failing or slow (a probe never blocks a run)."""
    if exe is None:
        return None
    try:
        done = subprocess.run(
            [exe, *args], capture_output=True, text=True, timeout=TOOL_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def parse_pmic(text: str) -> float | None:
    """Watts from `vcgencmd pmic_read_adc`: each rail's current (`X_A`) times its voltage
    (`X_V`), summed. Rails without both (EXT5V_V) do not count; none at all is None."""
    amps: dict[str, float] = {}
    volts: dict[str, float] = {}
    for line in text.splitlines():
        name, _, rest = line.strip().partition(" ")
        value = number_or_none(rest.partition("=")[2].rstrip("AV"))
        if value is None:
            continue
        if name.endswith("_A"):
            amps[name[:-2]] = value
        elif name.endswith("_V"):
            volts[name[:-2]] = value
    rails = [amps[k] * volts[k] for k in amps if k in volts]
    return round(sum(rails), 3) if rails else None


def vm_hwm_mb(pid: int) -> float | None:
    """The peak resident set of a live process (VmHWM, KiB) in MiB; None once it is gone."""
    for line in (read_file(f"/proc/{pid}/status") or "").splitlines():
        if line.startswith("VmHWM:"):
            kib = number_or_none(line.split()[1]) if len(line.split()) > 1 else None
            # 0 kB is a process with no pages yet (or gone): not measured, never 0 MiB.
            return round(kib / 1024.0, 2) if kib is not None and kib > 0 else None
    return None


class Probes:
    """Finds the sources once, then reads them cheaply per sample."""

    def __init__(self, root: str | None = None, path: str | None = None) -> None:
        self.root = root if root is not None else os.environ.get("BENCHLAB_SYSFS_ROOT") or "/"

        def under(pattern: str) -> list[str]:
            return sorted(glob.glob(os.path.join(self.root, pattern)))

        self.thermal = under("sys/class/thermal/thermal_zone*/temp")
        self.hwmon = under("sys/class/hwmon/hwmon*/temp*_input")
        self.cpufreq = under("sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_cur_freq")
        # Top-level zones only (a subzone is inside its package), and never `psys`: the
        # platform zone of some laptops already counts the packages it holds.
        self.rapl = [
            p
            for p in under("sys/class/powercap/intel-rapl:[0-9]*/energy_uj")
            if os.path.basename(os.path.dirname(p)).count(":") == 1
            and (read_file(os.path.join(os.path.dirname(p), "name")) or "").strip() != "psys"
            and read_file(p) is not None
        ]
        self.rapl_range = [
            number_or_none(read_file(os.path.join(os.path.dirname(p), "max_energy_range_uj")))
            or 0.0
            for p in self.rapl
        ]
        self.nvidia_smi = shutil.which("nvidia-smi", path=path)
        self.rocm_smi = shutil.which("rocm-smi", path=path)
        self.vcgencmd = shutil.which("vcgencmd", path=path)
        self._last_energy: tuple[float, list[float]] | None = None
        self.rapl_joules: float | None = None
        self.watched: int | None = None
        self.hwm_mb: float | None = None
        self.refused: dict[str, str] = {}
        """Channels a tool printed a reading for that is not one (`_reading`), and what."""

    def sources(self) -> dict[str, Any]:
        return {
            "temperature": "thermal_zone" if self.thermal else ("hwmon" if self.hwmon else None),
            "cpu_freq": "cpufreq" if self.cpufreq else "/proc/cpuinfo",
            "load": "/proc/loadavg",
            "power": "rapl" if self.rapl else None,
            "gpu": "nvidia-smi" if self.nvidia_smi else ("rocm-smi" if self.rocm_smi else None),
            "pmic": "vcgencmd" if self.vcgencmd else None,
        }

    def temperature(self) -> float | None:
        values = [number_or_none(read_file(p)) for p in (self.thermal or self.hwmon)]
        temps = [v / 1000.0 for v in values if v is not None and v > 0]
        return round(max(temps), 1) if temps else None

    def cpu_freq(self) -> float | None:
        if self.cpufreq:
            values = [number_or_none(read_file(p)) for p in self.cpufreq]
            khz = [v for v in values if v]
            return round(sum(khz) / len(khz) / 1000.0, 1) if khz else None
        mhz = []
        for line in (read_file(os.path.join(self.root, "proc/cpuinfo")) or "").splitlines():
            if line.startswith("cpu MHz"):
                value = number_or_none(line.partition(":")[2])
                if value:
                    mhz.append(value)
        return round(sum(mhz) / len(mhz), 1) if mhz else None

    def load(self) -> float | None:
        text = read_file(os.path.join(self.root, "proc/loadavg"))
        return number_or_none(text.split()[0]) if text else None

    def power(self, now: float) -> float | None:
        """Package power from RAPL energy counters: a rate, so the first call answers None.
        Each interval's joules are also added to `rapl_joules`, the run's energy."""
        if not self.rapl:
            return None
        energy = [number_or_none(read_file(p)) for p in self.rapl]
        if any(e is None for e in energy):
            return None
        current = [float(e) for e in energy if e is not None]
        last, self._last_energy = self._last_energy, (now, current)
        if last is None or now <= last[0]:
            return None
        joules = 0.0
        for before, after, wrap in zip(last[1], current, self.rapl_range, strict=True):
            delta = after - before
            joules += (delta + wrap if delta < 0 and wrap else delta) / 1e6
        self.rapl_joules = (self.rapl_joules or 0.0) + joules
        return round(joules / (now - last[0]), 2)

    def gpu(self) -> tuple[float | None, float | None, float | None]:
        """(power W, temperature C, memory used MiB) summed/maxed over the GPUs."""
        if not self.nvidia_smi:
            return self._rocm()
        text = run_exe(
            self.nvidia_smi,
            [
                "--query-gpu=power.draw,temperature.gpu,memory.used",
                "--format=csv,noheader,nounits",
            ],
        )
        power: list[float] = []
        temps: list[float] = []
        memory: list[float] = []
        channels = ("gpu_power_w", "gpu_temperature_c", "gpu_mem_mb")
        for line in (text or "").strip().splitlines():
            cols = line.split(",")
            for column, channel, cell in zip((power, temps, memory), channels, cols, strict=False):
                value = _reading(cell, self.refused, channel)
                if value is not None:
                    column.append(value)
        return (
            round(sum(power), 2) if power else None,
            max(temps) if temps else None,
            round(sum(memory), 1) if memory else None,
        )

    def _rocm(self) -> tuple[float | None, float | None, float | None]:
        import json

        text = run_exe(self.rocm_smi, ["--showpower", "--showmeminfo", "vram", "--json"])
        try:
            cards = json.loads(text) if text else {}
        except ValueError:
            return None, None, None
        power: list[float] = []
        memory: list[float] = []
        for card in (cards or {}).values():
            for key, value in card.items() if isinstance(card, dict) else ():
                number = number_or_none(value)
                if number is not None and "Power" in key and "(W)" in key:
                    power.append(number)
                elif number is not None and "VRAM Total Used Memory (B)" in key:
                    memory.append(number / 2**20)
        return (
            round(sum(power), 2) if power else None,
            None,
            round(sum(memory), 1) if memory else None,
        )

    def pmic(self) -> float | None:
        text = run_exe(self.vcgencmd, ["pmic_read_adc"])
        return parse_pmic(text) if text else None

    def watch(self, pid: int) -> None:
        """Follow `pid`'s peak resident set (VmHWM) from now on, sample by sample."""
        self.watched = pid
        self.peak_rss()

    def peak_rss(self) -> None:
        if self.watched is not None:
            value = vm_hwm_mb(self.watched)
            if value is not None:
                self.hwm_mb = max(self.hwm_mb or 0.0, value)

    def sample(self, t0: float) -> dict[str, Any]:
        now = time.monotonic()
        gpu_power, gpu_temp, gpu_mem = self.gpu()
        self.peak_rss()
        return {
            "t_s": round(now - t0, 3),
            "temperature_c": self.temperature(),
            "cpu_freq_mhz": self.cpu_freq(),
            "load_1m": self.load(),
            "power_w": self.power(now),
            "gpu_power_w": gpu_power,
            "gpu_temperature_c": gpu_temp,
            "gpu_mem_mb": gpu_mem,
            "pmic_power_w": self.pmic(),
        }


def energy_summary(integrated: dict[str, float], rapl_j: float | None) -> dict[str, Any] | None:
    """{"rapl_j", "gpu_j", "pmic_j", "total_j", "sources"} for the counters this device has;
    None where it has none (not measured is not 0 J)."""
    parts = dict(integrated)
    if rapl_j is not None:
        parts["rapl_j"] = rapl_j
    if not parts:
        return None
    out: dict[str, Any] = {key: round(value, 3) for key, value in sorted(parts.items())}
    out["total_j"] = round(sum(parts.values()), 3)
    out["sources"] = sorted(key.removesuffix("_j") for key in parts)
    return out


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2.0


def summarise(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """{channel: {min, median, max} or None} for every channel, plus the samples."""
    out: dict[str, Any] = {}
    for channel in CHANNELS:
        values = [s[channel] for s in samples if s.get(channel) is not None]
        out[channel] = (
            {"min": min(values), "median": round(_median(values), 3), "max": max(values)}
            if values
            else None
        )
    return out


class Sampler:
    """Samples in a daemon thread between start() and stop(); stop() returns the summary.

    Past MAX_SAMPLES the samples are no longer kept, but the probes are still read, so the
    energy of a long run is counted to its end."""

    MAX_SAMPLES = 10_000

    def __init__(
        self, interval_s: float = 0.5, *, root: str | None = None, path: str | None = None
    ) -> None:
        self.interval_s = max(0.05, float(interval_s))
        self.samples: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._watcher: threading.Thread | None = None
        self._probes: Probes | None = None
        self._root = root
        self._path = path
        self._t0 = 0.0
        self._joules: dict[str, float] = {}
        self._last: dict[str, tuple[float, float]] = {}

    def _take(self) -> None:
        assert self._probes is not None
        try:
            sample = self._probes.sample(self._t0)
        except Exception as exc:  # a probe must never kill the run it observes
            sample = {"t_s": round(time.monotonic() - self._t0, 3), "error": str(exc)}
        self._integrate(sample)
        if len(self.samples) < self.MAX_SAMPLES:
            self.samples.append(sample)

    def _integrate(self, sample: dict[str, Any]) -> None:
        for name, channel in INTEGRATED.items():
            power = sample.get(channel)
            if not isinstance(power, (int, float)):
                continue
            now = float(sample["t_s"])
            last = self._last.get(name)
            if last is not None:
                part = max(0.0, now - last[0]) * (power + last[1]) / 2.0
                self._joules[name] = self._joules.get(name, 0.0) + part
            self._last[name] = (now, float(power))

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._take()

    def start(self) -> None:
        self._t0 = time.monotonic()
        self._probes = Probes(self._root, self._path)
        self._take()
        self._thread = threading.Thread(target=self._loop, name="telemetry", daemon=True)
        self._thread.start()

    def watch(self, pid: int) -> None:
        """Follow the task's peak resident set (the fallback where wait4 cannot say) every
        RSS_POLL_S: a short benchmark may live less than one sample interval."""
        if self._probes is None:
            return
        probes = self._probes
        probes.watch(pid)

        def poll() -> None:
            while not self._stop.wait(RSS_POLL_S):
                probes.peak_rss()

        self._watcher = threading.Thread(target=poll, name="rss", daemon=True)
        self._watcher.start()

    @property
    def hwm_mb(self) -> float | None:
        return self._probes.hwm_mb if self._probes is not None else None

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        for thread in (self._thread, self._watcher):
            if thread is not None:
                thread.join(timeout=10)
        if self._probes is not None:
            self._take()
        summary = summarise(self.samples)
        summary["interval_s"] = self.interval_s
        summary["sources"] = self._probes.sources() if self._probes else {}
        rapl = self._probes.rapl_joules if self._probes else None
        summary["energy"] = energy_summary(self._joules, rapl)
        if self._probes is not None and self._probes.refused:
            summary["refused"] = dict(sorted(self._probes.refused.items()))
        summary["samples"] = self.samples
        return summary
