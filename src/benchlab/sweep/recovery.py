"""Recovering a killed sweep's assignments and publishing what is on the devices now.

A mixin of the concurrent scheduler's `_Sweep`: the methods run on its state (its lock,
devices and store) and were split out of `scheduler.py` only to keep that file readable.
The assignment log is what lets a restarted sweep tell which points a killed one held.
"""

from __future__ import annotations

import json
from typing import Any

from benchlab.layout import IN_FLIGHT, atomic_write_bytes
from benchlab.sweep.assignments import (
    by_session,
    held_at_end,
    read_assignments,
)


class _Recovery:
    """Part of `_Sweep`; see the module docstring."""

    def _persist_assignment(self, event: str, **fields: Any) -> None:
        """One assignments.jsonl line (a worker thread, unlocked); a disk that refuses it
        warns once and the sweep goes on: the records are the measurement."""
        if self.assignment_log is None:
            return
        try:
            if event == "start":
                self.assignment_log.started(**fields)
            else:
                self.assignment_log.finished(**fields)
        except OSError as exc:
            with self.lock:
                warned, self._assignments_warned = self._assignments_warned, True
            if not warned:
                self._event(f"WARNING worker assignments not written: {exc}")

    def recover_assignments(self) -> None:
        """Give the earlier sessions schedule.json keeps their assignments as
        assignments.jsonl has them, and say which points were on a worker when one died."""
        if self.assignment_log is None:
            return
        lines = read_assignments(self.assignment_log.path)
        finished, held = by_session(lines), held_at_end(lines)
        for session in self.log.earlier:
            session_id = session.get("session")
            if not isinstance(session_id, str) or "held_at_end" in session:
                continue  # written before sessions had ids, or recovered already
            if session_id in finished:
                session["assignments"] = finished[session_id]
            session["held_at_end"] = [x for x in held if x.get("session") == session_id]
            for line in session["held_at_end"]:
                self._event(
                    f"HELD {line.get('run_id')} was on {line.get('worker')} (attempt "
                    f"{line.get('attempt')}) when session {session_id} ended; not finished "
                    "there, it runs again unless its record is done"
                )

    def _publish_in_flight(self) -> None:
        """in_flight.json: points running now per device, for observers such as the exporter.

        Written by the main thread as it polls for a stop request, and only on change, so
        workers never wait on it; not fsynced: a crash makes it stale, never torn.
        """
        with self.lock:
            counts = {device.id: device.busy for device in self.devices.values()}
        if counts == self._in_flight_written:
            return
        text = json.dumps(counts, sort_keys=True) + "\n"
        atomic_write_bytes(self.log.schedule_path.parent / IN_FLIGHT, text.encode(), durable=False)
        self._in_flight_written = counts
