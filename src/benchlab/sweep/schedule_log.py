"""What a concurrent sweep writes down besides its records (ARCHITECTURE.md, invariant 2).

- `runs/sweeps/<experiment>/retries.jsonl`: one line per transport failure and per failover
  (and per hole), appended, flushed and fsynced line by line, so a sweep killed at any
  instant leaves every line it had written whole.
- `runs/sweeps/<experiment>/schedule.json`: policy, per-device outcomes, breaker trips,
  clock offsets, failover choices and which worker ran which point, rewritten atomically
  whenever something notable happens and at the end. The current session is at the top
  level (what the exporter reads live); every earlier session of the experiment is kept,
  whole, in `sessions` (oldest first), because a resume that dropped them would forget that
  a device failed four times and report it as fit.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from benchlab.errors import StoreError
from benchlab.files import read_bytes, read_text
from benchlab.ids import utc_iso
from benchlab.layout import RETRIES, SCHEDULE, append_json_lines, atomic_write_json

SESSIONS = "sessions"
"""The key of schedule.json that holds the earlier sessions."""


class ScheduleLog:
    """The two files of one sweep dir. Thread-safe: workers append from their own threads."""

    def __init__(self, sweep_dir: Path) -> None:
        self.retries_path = sweep_dir / RETRIES
        self.schedule_path = sweep_dir / SCHEDULE
        self._lock = threading.Lock()
        self.earlier: list[dict[str, Any]] = []

    def load_history(self) -> list[dict[str, Any]]:
        """Keep what schedule.json holds now as earlier sessions of the one about to start.

        Called once per session, under the experiment lock, before the first write.
        """
        self.earlier = all_sessions(_load(self.schedule_path))
        return self.earlier

    def append(self, **fields: Any) -> dict[str, Any]:
        """One retries.jsonl line; `at` (UTC) is added when not given."""
        line = {"at": utc_iso(), **fields}
        with self._lock:
            append_json_lines(self.retries_path, [line])
        return line

    def write_schedule(self, document: dict[str, Any]) -> None:
        """This session's document at the top level, earlier sessions under `sessions`."""
        with self._lock:
            atomic_write_json(self.schedule_path, {**document, SESSIONS: list(self.earlier)})


def _load(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(read_bytes(path))
    except (StoreError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def all_sessions(schedule: dict[str, Any]) -> list[dict[str, Any]]:
    """Every session a schedule.json document holds, oldest first, the latest one last.

    A document written before sessions were kept is one session; an empty one is none.
    """
    if not schedule:
        return []
    earlier = schedule.get(SESSIONS)
    sessions = [s for s in earlier if isinstance(s, dict)] if isinstance(earlier, list) else []
    latest = {key: value for key, value in schedule.items() if key != SESSIONS}
    return [*sessions, latest] if latest else sessions


def read_retries(path: Path) -> list[dict[str, Any]]:
    """Every whole line of a retries.jsonl; one being appended right now is skipped.

    Readers (the exporter, `bench devices report`) run beside a live sweep, so a last line
    without its newline yet is normal, not corruption.
    """
    if not path.exists():
        return []
    lines = []
    for text in read_text(path, errors="replace").splitlines():
        try:
            value = json.loads(text)
        except ValueError:
            continue
        if isinstance(value, dict):
            lines.append(value)
    return lines
