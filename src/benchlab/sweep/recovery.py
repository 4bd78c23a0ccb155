"""Recovering a killed sweep's assignments and publishing what is on the devices now.

Functions of the sweep's one `SweepState` (worker_state.py). The assignment log is what
lets a restarted sweep tell which points a killed one held.
"""

from __future__ import annotations

import json
from typing import Any

from benchlab.layout import IN_FLIGHT, atomic_write_bytes
from benchlab.sweep.assignments import by_session, held_at_end, read_assignments
from benchlab.sweep.worker_state import SweepState

__all__ = ["persist_assignment", "publish_in_flight", "recover_assignments"]


def persist_assignment(state: SweepState, event: str, **fields: Any) -> None:
    """One assignments.jsonl line (a worker thread, unlocked); a disk that refuses it
    warns once and the sweep goes on: the records are the measurement."""
    if state.assignment_log is None:
        return
    try:
        if event == "start":
            state.assignment_log.started(**fields)
        else:
            state.assignment_log.finished(**fields)
    except OSError as exc:
        with state.lock:
            warned, state.assignments_warned = state.assignments_warned, True
        if not warned:
            state.event(f"WARNING worker assignments not written: {exc}")


def recover_assignments(state: SweepState) -> None:
    """Give the earlier sessions schedule.json keeps their assignments as
    assignments.jsonl has them, and say which points were on a worker when one died."""
    if state.assignment_log is None:
        return
    lines = read_assignments(state.assignment_log.path)
    finished, held = by_session(lines), held_at_end(lines)
    for session in state.log.earlier:
        session_id = session.get("session")
        if not isinstance(session_id, str) or "held_at_end" in session:
            continue  # written before sessions had ids, or recovered already
        if session_id in finished:
            session["assignments"] = finished[session_id]
        session["held_at_end"] = [x for x in held if x.get("session") == session_id]
        for line in session["held_at_end"]:
            state.event(
                f"HELD {line.get('run_id')} was on {line.get('worker')} (attempt "
                f"{line.get('attempt')}) when session {session_id} ended; not finished "
                "there, it runs again unless its record is done"
            )


def publish_in_flight(state: SweepState) -> None:
    """in_flight.json: points running now per device, for observers such as the exporter.

    Written by the main thread as it polls for a stop request, and only on change, so
    workers never wait on it; not fsynced: a crash makes it stale, never torn.
    """
    with state.lock:
        counts = {device.id: device.busy for device in state.devices.values()}
    if counts == state.in_flight_written:
        return
    text = json.dumps(counts, sort_keys=True) + "\n"
    atomic_write_bytes(state.log.schedule_path.parent / IN_FLIGHT, text.encode(), durable=False)
    state.in_flight_written = counts
