"""Telemetry sampled on the device while a task runs: temperature, CPU frequency, load, power.

A background thread samples every `interval_s` until the task ends; one sample is always
taken at the start and one at the end, so even a short run has two. Each channel is None
where this device does not expose it (no thermal zones in a container, RAPL counters that
only root may read, no nvidia-smi). The summary is min/median/max per channel plus the
samples themselves, so nothing is thrown away.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import threading
import time
from typing import Any

CHANNELS = (
    "temperature_c",
    "cpu_freq_mhz",
    "load_1m",
    "power_w",
    "gpu_power_w",
    "gpu_temperature_c",
)


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


def _number(text: str | None) -> float | None:
    try:
        return float(str(text).strip())
    except (TypeError, ValueError):
        return None


class Probes:
    """Finds the sources once, then reads them cheaply per sample."""

    def __init__(self) -> None:
        self.thermal = sorted(glob.glob("/sys/class/thermal/thermal_zone*/temp"))
        self.hwmon = sorted(glob.glob("/sys/class/hwmon/hwmon*/temp*_input"))
        self.cpufreq = sorted(
            glob.glob("/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_cur_freq")
        )
        self.rapl = [
            path
            for path in sorted(glob.glob("/sys/class/powercap/intel-rapl:[0-9]*/energy_uj"))
            if os.path.basename(os.path.dirname(path)).count(":") == 1 and _read(path) is not None
        ]
        self.rapl_range = [
            _number(_read(os.path.join(os.path.dirname(p), "max_energy_range_uj"))) or 0.0
            for p in self.rapl
        ]
        self.nvidia_smi = shutil.which("nvidia-smi")
        self._last_energy: tuple[float, list[float]] | None = None

    def sources(self) -> dict[str, Any]:
        return {
            "temperature": "thermal_zone" if self.thermal else ("hwmon" if self.hwmon else None),
            "cpu_freq": "cpufreq" if self.cpufreq else "/proc/cpuinfo",
            "load": "/proc/loadavg",
            "power": "rapl" if self.rapl else None,
            "gpu": "nvidia-smi" if self.nvidia_smi else None,
        }

    def temperature(self) -> float | None:
        values = [_number(_read(p)) for p in (self.thermal or self.hwmon)]
        temps = [v / 1000.0 for v in values if v is not None and v > 0]
        return round(max(temps), 1) if temps else None

    def cpu_freq(self) -> float | None:
        if self.cpufreq:
            values = [_number(_read(p)) for p in self.cpufreq]
            khz = [v for v in values if v]
            return round(sum(khz) / len(khz) / 1000.0, 1) if khz else None
        mhz = []
        for line in (_read("/proc/cpuinfo") or "").splitlines():
            if line.startswith("cpu MHz"):
                value = _number(line.partition(":")[2])
                if value:
                    mhz.append(value)
        return round(sum(mhz) / len(mhz), 1) if mhz else None

    def load(self) -> float | None:
        text = _read("/proc/loadavg")
        return _number(text.split()[0]) if text else None

    def power(self, now: float) -> float | None:
        """Package power from RAPL energy counters: a rate, so the first call answers None."""
        if not self.rapl:
            return None
        energy = [_number(_read(p)) for p in self.rapl]
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
        return round(joules / (now - last[0]), 2)

    def gpu(self) -> tuple[float | None, float | None]:
        if not self.nvidia_smi:
            return None, None
        try:
            done = subprocess.run(
                [
                    self.nvidia_smi,
                    "--query-gpu=power.draw,temperature.gpu",
                    "--format=csv,noheader,nounits",
                ],
                capture_output=True,
                text=True,
                timeout=5,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return None, None
        power: list[float] = []
        temps: list[float] = []
        for line in done.stdout.strip().splitlines():
            cols = [_number(c) for c in line.split(",")]
            if cols and cols[0] is not None:
                power.append(cols[0])
            if len(cols) > 1 and cols[1] is not None:
                temps.append(cols[1])
        return (round(sum(power), 2) if power else None, max(temps) if temps else None)

    def sample(self, t0: float) -> dict[str, Any]:
        now = time.monotonic()
        gpu_power, gpu_temp = self.gpu()
        return {
            "t_s": round(now - t0, 3),
            "temperature_c": self.temperature(),
            "cpu_freq_mhz": self.cpu_freq(),
            "load_1m": self.load(),
            "power_w": self.power(now),
            "gpu_power_w": gpu_power,
            "gpu_temperature_c": gpu_temp,
        }


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
    """Samples in a daemon thread between start() and stop(); stop() returns the summary."""

    MAX_SAMPLES = 10_000

    def __init__(self, interval_s: float = 0.5) -> None:
        self.interval_s = max(0.05, float(interval_s))
        self.samples: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._probes: Probes | None = None
        self._t0 = 0.0

    def _take(self) -> None:
        assert self._probes is not None
        if len(self.samples) < self.MAX_SAMPLES:
            try:
                self.samples.append(self._probes.sample(self._t0))
            except Exception as exc:  # a probe must never kill the run it observes
                self.samples.append(
                    {"t_s": round(time.monotonic() - self._t0, 3), "error": str(exc)}
                )

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._take()

    def start(self) -> None:
        self._t0 = time.monotonic()
        self._probes = Probes()
        self._take()
        self._thread = threading.Thread(target=self._loop, name="telemetry", daemon=True)
        self._thread.start()

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._probes is not None:
            self._take()
        summary = summarise(self.samples)
        summary["interval_s"] = self.interval_s
        summary["sources"] = self._probes.sources() if self._probes else {}
        summary["samples"] = self.samples
        return summary
