"""Which worker holds and ran which point, written as it happens (a killed session keeps it).

`runs/sweeps/<experiment>/assignments.jsonl`: one line when a worker takes a point
(`start`) and one when its attempt ends (`finish`), each tagged with the session, appended,
flushed and fsynced line by line (layout.append_json_lines), so a session killed at any
instant (SIGKILL included) leaves every line it had written whole and at most one partial
last line, which readers skip. schedule.json's `assignments` is rewritten only now and then,
so on its own it forgets what a killed session did since its last rewrite.

A resumed session reads the file: every attempt an earlier session started and never
finished was on a worker when that session died. The resumed session says so (one line per
point), writes them to schedule.json under `held_at_end`, and gives each earlier session it
keeps its assignments as the file has them, so the report's fitness sees every attempt.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchlab.errors import StoreError
from benchlab.files import open_stream
from benchlab.ids import utc_iso
from benchlab.layout import append_json_lines

ASSIGNMENTS = "assignments.jsonl"
MAX_LINES_READ = 1_000_000
"""A file someone else let grow is read no further than this."""


class AssignmentLog:
    """The appender of one session; each call writes (and fsyncs) one line."""

    def __init__(self, sweep_dir: Path, session: str) -> None:
        self.path = sweep_dir / ASSIGNMENTS
        self.session = session

    def started(self, **fields: Any) -> None:
        """A worker took a point: run_id, spec_id, device, machine_id, worker, attempt."""
        append_json_lines(self.path, [{"event": "start", **self._common(), **fields}])

    def finished(self, **fields: Any) -> None:
        """The attempt ended: run_id, worker, attempt, status, failure_kind."""
        append_json_lines(self.path, [{"event": "finish", **self._common(), **fields}])

    def _common(self) -> dict[str, Any]:
        return {"at": utc_iso(), "session": self.session}


def read_assignments(path: Path) -> list[dict[str, Any]]:
    """Every whole line, oldest first; a partial or foreign line is skipped."""
    lines: list[dict[str, Any]] = []
    try:
        with open_stream(path, cap=1 << 40) as handle:  # bounded by MAX_LINES_READ below
            for count, raw in enumerate(handle):
                if count >= MAX_LINES_READ:
                    break
                try:
                    line = json.loads(raw.decode("utf-8", errors="replace"))
                except ValueError:
                    continue
                if isinstance(line, dict) and line.get("event") in ("start", "finish"):
                    lines.append(line)
    except (OSError, StoreError):
        return []
    return lines


def _attempt_key(line: dict[str, Any]) -> tuple[str, str, int]:
    attempt = line.get("attempt")
    return (str(line.get("session")), str(line.get("run_id")), int(attempt or 0))


def held_at_end(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The start lines whose attempt never finished in its session, oldest first."""
    finished = {_attempt_key(line) for line in lines if line["event"] == "finish"}
    return [
        line for line in lines if line["event"] == "start" and _attempt_key(line) not in finished
    ]


def by_session(lines: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Each session's assignments as schedule.json lists them (finished attempts, with the
    device, spec and worker of their start line)."""
    starts = {_attempt_key(line): line for line in lines if line["event"] == "start"}
    out: dict[str, list[dict[str, Any]]] = {}
    for line in lines:
        if line["event"] != "finish":
            continue
        start = starts.get(_attempt_key(line), {})
        out.setdefault(str(line.get("session")), []).append(
            {
                "run_id": line.get("run_id"),
                "spec_id": start.get("spec_id"),
                "device": start.get("device"),
                "machine_id": start.get("machine_id"),
                "worker": line.get("worker"),
                "attempt": line.get("attempt"),
                "probe": start.get("probe", False),
                "status": line.get("status"),
                "failure_kind": line.get("failure_kind"),
            }
        )
    return out
