"""Error analysis of one sweep, per device (fitness, longevity, saved logs: ARCHITECTURE.md, The
scheduler).

Everything comes from what the sweep wrote down: schedule.json (breaker trips, attempts, of
this session and every earlier one it keeps under `sessions`),
retries.jsonl (every transport failure) and the records with their raw output. A device
that failed is judged by how often and how long, and the failing attempts' own stdout and
stderr are at hand, so "pi5 is flaky" becomes something one can read and act on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchlab.errors import StoreError
from benchlab.files import read_text
from benchlab.ids import epoch_of
from benchlab.layout import IN_FLIGHT, RAW_DIR, RETRIES, Store
from benchlab.models import HOLE_ERROR_PREFIX
from benchlab.observe.exporter import SweepView, load_if_present
from benchlab.sweep.schedule_log import all_sessions, read_retries

TAIL_LINES = 20


def _is_hole(record: dict[str, Any]) -> bool:
    return str(record.get("error") or "").startswith(HOLE_ERROR_PREFIX)


def _tail(path: Path, lines: int = TAIL_LINES) -> str | None:
    try:
        text = read_text(path, errors="replace")
    except StoreError:
        return None
    return "\n".join(text.splitlines()[-lines:])


@dataclass
class FailedAttempt:
    device: str
    run_id: str
    kind: str
    error: str
    stdout_path: str | None = None
    stdout_tail: str | None = None
    stderr_path: str | None = None
    stderr_tail: str | None = None


@dataclass
class DeviceHealth:
    device: str
    fitness: float | None
    uptime_share: float | None
    transport_failures: int
    mtbf_s: float | None
    ok: int = 0
    failed: int = 0
    holes: int = 0
    in_flight: int = 0
    breaker: str | None = None
    trips: int = 0


@dataclass
class SweepHealth:
    experiment: str
    stamp: str | None
    span_s: float | None
    devices: list[DeviceHealth] = field(default_factory=list)
    failed_attempts: list[FailedAttempt] = field(default_factory=list)


def _down_seconds(sessions: list[dict[str, Any]], device: str, start: float, end: float) -> float:
    """Seconds `device`'s breaker was open within [start, end], over every session.

    A trip that never closed ends with its session (its `ended_at`, else the next session's
    start, else `end`): a device is not down between sweeps, only unmeasured.
    """
    total = 0.0
    for index, session in enumerate(sessions):
        following = sessions[index + 1].get("started_at") if index + 1 < len(sessions) else None
        session_end = epoch_of(session.get("ended_at")) or epoch_of(following) or end
        info = ((session.get("devices") or {}).get(device)) or {}
        for trip in (info.get("breaker") or {}).get("trips") or []:
            opened = epoch_of(trip.get("opened_at"))
            if opened is None:
                continue
            back = epoch_of(trip.get("closed_at")) or session_end
            total += max(min(back, end) - max(opened, start), 0.0)
    return total


def report(store: Store, experiment: str, *, window: int | None = None) -> SweepHealth:
    """Per-device health of the latest sweep of `experiment`, over all its sessions.

    Fitness, trips and down time read every session schedule.json keeps (a resume must not
    make a device that failed four times look fit); ok/failed/holes are the records of the
    sweep's stamp; transport failures are every line of retries.jsonl. The breaker state is
    the latest session's.
    """
    view = SweepView(store.sweep_dir(experiment))
    state, schedule = view.state(), view.schedule()
    window = window or int(((schedule.get("policy") or {}).get("fitness") or {}).get("window", 20))
    records = list(view.records())
    start = epoch_of(state.get("started_at"))
    finishes = [epoch_of((r.get("timings") or {}).get("finished_at")) for r, _ in records]
    end = max([f for f in finishes if f is not None], default=start)
    span = (end - start) if start is not None and end is not None else None

    retries = [r for r in (read_retries(view.sweep_dir / RETRIES)) if r.get("kind") == "transport"]
    in_flight = load_if_present(view.sweep_dir / IN_FLIGHT) or {}
    sessions = all_sessions(schedule)
    attempts_by_device: dict[str, list[str]] = {}
    device_ids: set[str] = {str(r.get("device")) for r, _ in records}
    breakers: dict[str, dict[str, Any]] = {}
    trips: dict[str, int] = {}
    for session in sessions:  # oldest first: the fitness window keeps the most recent
        for attempt in session.get("assignments") or []:
            attempts_by_device.setdefault(str(attempt.get("device")), []).append(
                str(attempt.get("status"))
            )
        for device, info in (session.get("devices") or {}).items():
            device_ids.add(str(device))
            breaker = (info or {}).get("breaker") or {}
            breakers[str(device)] = breaker
            trips[str(device)] = trips.get(str(device), 0) + len(breaker.get("trips") or [])
    health = SweepHealth(experiment, state.get("stamp"), span)
    for device in sorted(device_ids):
        breaker = breakers.get(device) or {}
        mine = [r for r, _ in records if r.get("device") == device]
        failures = sum(1 for r in retries if r.get("device") == device)
        recent = attempts_by_device.get(device, [])[-window:]
        running = int(in_flight.get(device, 0)) if isinstance(in_flight, dict) else 0
        outcomes = len(recent) + running
        fitness = (recent.count("ok") + running) / outcomes if outcomes else None
        down = _down_seconds(sessions, device, start or 0.0, end or 0.0)
        up_time = max((span or 0.0) - down, 0.0)
        health.devices.append(
            DeviceHealth(
                device=device,
                fitness=fitness,
                uptime_share=(up_time / span) if span else (1.0 if not down else None),
                transport_failures=failures,
                mtbf_s=(up_time / failures) if failures and span else None,
                ok=sum(1 for r in mine if r.get("status") == "ok"),
                failed=sum(1 for r in mine if r.get("status") != "ok"),
                holes=sum(
                    1 for r in mine if str(r.get("error") or "").startswith(HOLE_ERROR_PREFIX)
                ),
                in_flight=running,
                breaker=breaker.get("state"),
                trips=trips.get(device, 0),
            )
        )
    for line in retries:
        health.failed_attempts.append(
            FailedAttempt(
                str(line.get("device")),
                str(line.get("run_id")),
                "transport",
                f"attempt {line.get('attempt')}: {line.get('error')}",
            )
        )
    for record, _ in records:
        if record.get("status") == "ok" or str(record.get("error") or "").startswith(
            HOLE_ERROR_PREFIX
        ):
            continue
        raw = store.run_dir(str(record["machine_id"]), str(record["run_id"])) / RAW_DIR
        out, err = raw / "stdout.txt", raw / "stderr.txt"
        health.failed_attempts.append(
            FailedAttempt(
                str(record.get("device")),
                str(record["run_id"]),
                str(record.get("failure_kind") or "failed"),
                str(record.get("error") or ""),
                store.relative(out) if out.is_file() else None,
                _tail(out),
                store.relative(err) if err.is_file() else None,
                _tail(err),
            )
        )
    return health
