"""Every device of a store over every sweep (`bench devices report` with no experiment).

A device is (machine, device), never a device name alone: names are a config's choice and
the default `local` is the same name on every machine, so a store that holds sweeps of two
laptops has two `local` devices, each with its own counts and its own history. Which
machine a sweep's device was is the sweep's own word (`machine_id` in schedule.json's
device state), else the machine of its records, else the device id (what a config means
when it names no machine). Fitness, history length and "pending too long" come from the
device's own lines of its machine's lasting history (history.py), not the whole machine's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchlab.errors import BenchlabError
from benchlab.layout import RECORD, SCHEDULE, SWEEP_STATE, Store, read_json
from benchlab.observe.health import report
from benchlab.sweep.history import HISTORY, fitness_of, line_machine, read_history
from benchlab.sweep.schedule_log import all_sessions

MAX_EXPERIMENTS = 10_000
"""No store has more sweeps than this; a fleet report reads no further."""


@dataclass
class FleetDevice:
    """One (machine, device) over every sweep of the store."""

    machine_id: str
    device: str
    fitness: float | None = None
    """From the device's own lines of runs/devices/<machine>/history.jsonl."""
    history: int = 0
    experiments: int = 0
    transport_failures: int = 0
    ok: int = 0
    failed: int = 0
    holes: int = 0
    pending_too_long: int = 0
    trips: int = 0


def _load(path: Path) -> Any:
    try:
        return read_json(path)
    except (BenchlabError, OSError, ValueError):  # damaged: the report reads around it
        return None


def sweep_machines(store: Store, sweep_dir: Path, devices: set[str]) -> dict[str, str]:
    """Which machine each of a sweep's device ids was: schedule.json first (latest session
    wins), then its records (read only for devices the schedule does not name)."""
    schedule = _load(sweep_dir / SCHEDULE)
    out: dict[str, str] = {}
    for session in all_sessions(schedule if isinstance(schedule, dict) else {}):
        for device, info in (session.get("devices") or {}).items():
            machine = (info or {}).get("machine_id") if isinstance(info, dict) else None
            if isinstance(machine, str) and machine:
                out[str(device)] = machine
    missing = devices - set(out)
    state = _load(sweep_dir / SWEEP_STATE) if missing else None
    stamp = state.get("stamp") if isinstance(state, dict) else None
    for path in store.by_machine.glob(f"*/*-{stamp}/{RECORD}") if stamp else []:
        record = _load(path)
        if isinstance(record, dict) and record.get("experiment") == sweep_dir.name:
            device = str(record.get("device"))
            if device in missing:
                out[device] = str(record.get("machine_id") or path.parent.parent.name)
                missing.discard(device)
                if not missing:
                    break  # one record per device says its machine: read no further
    return {device: out.get(device, device) for device in devices}


def fleet_report(store: Store, *, window: int = 20) -> list[FleetDevice]:
    """Each sweep's per-device report summed per (machine, device), and fitness from each
    device's own history lines."""

    totals: dict[tuple[str, str], FleetDevice] = {}
    sweeps = sorted(p for p in store.sweeps_dir.glob("*") if (p / SWEEP_STATE).is_file())
    for sweep_dir in sweeps[:MAX_EXPERIMENTS]:
        health = report(store, sweep_dir.name, window=window)
        machines = sweep_machines(store, sweep_dir, {d.device for d in health.devices})
        for device in health.devices:
            key = (machines[device.device], device.device)
            total = totals.setdefault(key, FleetDevice(*key))
            total.experiments += 1
            total.transport_failures += device.transport_failures
            total.ok += device.ok
            total.failed += device.failed
            total.holes += device.holes
            total.trips += device.trips
    devices_dir = store.runs_dir / "devices"
    for path in sorted(devices_dir.glob(f"*/{HISTORY}")) if devices_dir.is_dir() else []:
        per_device: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for line in read_history(path):
            key = (line_machine(line, path), str(line.get("device")))
            per_device.setdefault(key, []).append(line)
        for key, lines in per_device.items():
            total = totals.setdefault(key, FleetDevice(*key))
            total.history = len(lines)
            total.fitness = fitness_of(lines, window)
            total.pending_too_long = sum(1 for x in lines if x.get("outcome") == "pending")
    return [totals[key] for key in sorted(totals)]
