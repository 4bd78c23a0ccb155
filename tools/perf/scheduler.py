"""Scheduler performance: overhead per point, and makespan against the ideal lower bound.

    python tools/perf/scheduler.py            # both figures (about half a minute)
    python tools/perf/scheduler.py --quick    # smaller, for a smoke run

1. Overhead: 10,000 points over 100 simulated devices (FakeDevice, zero-length benchmarks, a
   runner that writes nothing), concurrency 1-4, ten resource groups. Wall time of the whole
   run_sweep_concurrent divided by the points, median of several runs. Target <= 1 ms/point.
2. Makespan: the same fleet with simulated durations (seeded). Ideal lower bound = the largest
   of (each ungrouped device's work / its max_concurrency) and (each group's work / its
   limit), from the time each run really took on its (simulated) device, since a loaded
   machine oversleeps; the ratio to the nominal durations is printed too. Makespan is the
   whole run_sweep_concurrent call, set-up included. Target: within 5% of the bound.
3. Sequential overhead: the overhead fleet run by `run_sweep` without --concurrent (the same
   scheduler, one point at a time: each point hands over to the next device's worker).
   Printed, no target: it is the cost of one engine for both kinds of sweep.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchlab.devices.fake import FakeBehaviour, FakeDevice
from benchlab.errors import DeviceError
from benchlab.ids import run_id as make_run_id
from benchlab.models import RunRecord
from benchlab.sweep.attempt import AttemptOutcome
from benchlab.sweep.config import parse_sweep_config
from benchlab.sweep.groups import resolve
from benchlab.sweep.scheduler import run_sweep


class NullJournal:
    """Nothing done yet, nothing written: the scheduler's own cost is what is measured."""

    stamp = "20260101T000000Z"

    def begin(self, fresh: bool, config_path: Any) -> str:
        return self.stamp

    def run_id(self, spec: Any) -> str:
        return make_run_id(spec.spec_id, self.stamp)

    def is_done(self, spec: Any) -> bool:
        return False

    def record(self, spec: Any) -> None:
        return None


class NullRunner:
    """Asks the device to run (so FakeDevice durations apply) and returns a record in memory.

    It keeps how long each run really took on its device (a loaded machine oversleeps), so
    the ideal bound is computed from the work actually done, not from the nominal durations.
    """

    def __init__(self) -> None:
        self.work: dict[str, float] = {}
        self.first_start = float("inf")
        self.last_end = 0.0
        self._lock = threading.Lock()

    def attempt(self, spec, run_id, transport, *, attempt=1, attempts=1, worker=None, warnings=()):  # type: ignore[no-untyped-def]
        kind = None
        begun = time.perf_counter()
        try:
            envelope = transport.call("run", {"argv": [run_id]}, timeout=60)
            with self._lock:
                self.first_start = min(self.first_start, begun)
                self.last_end = max(self.last_end, time.perf_counter())
                seconds = envelope["finished_at"] - envelope["started_at"]
                self.work[spec.device] = self.work.get(spec.device, 0.0) + seconds
        except DeviceError:
            kind = "transport"
        record = RunRecord.model_construct(
            run_id=run_id,
            spec_id=spec.spec_id,
            device=spec.device,
            status="ok" if kind is None else "failed",
            error=None,
        )
        return AttemptOutcome(record=record, failure_kind=kind)

    def write_hole(self, spec, run_id, reason, *, failure_kind="transport"):  # type: ignore[no-untyped-def]
        raise AssertionError("no device drains in the perf run")


def fleet_config(devices: int, points_per_device: int, seed: int) -> Any:
    rng = random.Random(seed)
    config: dict[str, Any] = {"experiment": "perf", "devices": {}, "resource_groups": {}}
    for index in range(devices):
        name = f"d{index:03d}"
        entry: dict[str, Any] = {"max_concurrency": rng.choice([1, 1, 2, 4])}
        if index < 30:  # ten groups of three: one machine, several device ids
            group = f"g{index // 3}"
            entry = {"resource_group": group}
            config["resource_groups"][group] = {}
        config["devices"][name] = entry
    config["matrix"] = {
        "device": sorted(config["devices"]),
        "backend": "reference",
        "model": [f"m{i:03d}" for i in range(points_per_device)],
        "precision": "f32",
    }
    config["policies"] = {"retries": {"attempts": 1, "backoff_s": 0}}
    return parse_sweep_config(config, "perf")


def run_once(
    config: Any, durations: dict[str, float] | None, *, concurrent: bool = True
) -> tuple[float, int, NullRunner]:
    fleet: dict[str, FakeBehaviour] = {}
    lock = threading.Lock()

    def duration(task: dict[str, Any]) -> float:
        return durations.get(task["argv"][0], 0.0) if durations else 0.0

    def factory(device_id: str, _config: Any) -> FakeDevice:
        with lock:
            behaviour = fleet.setdefault(device_id, FakeBehaviour(duration_s=duration))
        return FakeDevice(device_id, behaviour)

    with tempfile.TemporaryDirectory() as tmp:
        runner = NullRunner()
        started = time.perf_counter()
        result = run_sweep(
            Path(tmp),
            config,
            None,
            concurrent=concurrent,
            _runner=runner,
            _journal=NullJournal(),
            _transport_factory=factory,
        )
        elapsed = time.perf_counter() - started
    return elapsed, len(result.records), runner


def ideal_bound(config: Any, work: dict[str, float]) -> float:
    groups = resolve(config)
    per_device: dict[str, float] = {}
    for device, seconds in work.items():
        per_device[device] = per_device.get(device, 0.0) + seconds
    bounds = []
    for group in groups.values():
        bounds.append(sum(per_device.get(m, 0.0) for m in group.members) / group.limit)
        for member in group.members:
            device = config.devices[member]
            bounds.append(per_device.get(member, 0.0) / device.max_concurrency)
    grouped = {m for group in groups.values() for m in group.members}
    for device_id, seconds in per_device.items():
        if device_id not in grouped:
            bounds.append(seconds / config.devices[device_id].max_concurrency)
    return max(bounds)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    devices, per_device = (20, 50) if args.quick else (100, 100)
    repeats = 2 if args.quick else args.repeats

    config = fleet_config(devices, per_device, seed=1)
    points = devices * per_device
    overheads, cpu = [], []
    for _ in range(repeats):
        cpu_start = time.process_time()
        elapsed, done, _work = run_once(config, None)
        cpu.append((time.process_time() - cpu_start) / points * 1000)
        assert done == points, (done, points)
        overheads.append(elapsed / points * 1000)
    median = statistics.median(overheads)
    print(
        f"overhead: {points} points over {devices} devices, zero-length: median "
        f"{median:.3f} ms/point wall (runs: {', '.join(f'{o:.3f}' for o in overheads)}), "
        f"{statistics.median(cpu):.3f} ms/point CPU; "
        f"target <= 1 ms: {'PASS' if median <= 1.0 else 'FAIL'}"
    )

    sim_devices, sim_points = (20, 10) if args.quick else (100, 20)
    config = fleet_config(sim_devices, sim_points, seed=2)
    rng = random.Random(3)
    from benchlab.sweep.expand import expand

    journal = NullJournal()
    durations: dict[str, float] = {}
    nominal: dict[str, float] = {}
    for spec in expand(config):
        seconds = rng.uniform(0.05, 0.15)
        durations[journal.run_id(spec)] = seconds
        nominal[spec.device] = nominal.get(spec.device, 0.0) + seconds
    ratios, nominal_ratios, inner = [], [], []
    for _ in range(max(repeats // 2, 1)):
        makespan, _done, runner = run_once(config, durations)
        bound = ideal_bound(config, runner.work)
        ratios.append(makespan / bound)
        inner.append((runner.last_end - runner.first_start) / bound)
        nominal_ratios.append(makespan / ideal_bound(config, nominal))
    ratio = statistics.median(ratios)
    print(
        f"makespan: {len(durations)} points over {sim_devices} devices, 50-150 ms each: "
        f"ideal lower bound {ideal_bound(config, nominal):.3f} s (nominal durations); "
        f"makespan / bound over the work actually done: median {ratio:.4f} "
        f"(runs: {', '.join(f'{r:.4f}' for r in ratios)}; first start to last finish: "
        f"{', '.join(f'{r:.4f}' for r in inner)}); over the nominal durations: "
        f"{', '.join(f'{r:.4f}' for r in nominal_ratios)}; "
        f"target <= 1.05: {'PASS' if ratio <= 1.05 else 'FAIL'}"
    )

    config = fleet_config(20, 50, seed=1)
    serial = []
    for _ in range(repeats):
        elapsed, done, _work = run_once(config, None, concurrent=False)
        assert done == 1000, done
        serial.append(elapsed / done * 1000)
    print(
        f"sequential overhead: 1000 points over 20 devices, zero-length, one at a time: "
        f"median {statistics.median(serial):.3f} ms/point wall "
        f"(runs: {', '.join(f'{o:.3f}' for o in serial)})"
    )
    return 0 if median <= 1.0 and ratio <= 1.05 else 1


if __name__ == "__main__":
    sys.exit(main())
