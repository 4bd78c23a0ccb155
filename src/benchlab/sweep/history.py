"""Device history that outlives a sweep (fitness that lasts: ARCHITECTURE.md, The scheduler).

`runs/devices/<machine>/history.jsonl` (private, beside the machine's lock): one line per
outcome of a point on that machine, from every experiment and session, appended and fsynced
line by line. The next session seeds each device's fitness from the most recent lines, so a
device that failed all of yesterday's sweep starts today judged by that, not as new.

A device is (machine, device): device ids are names a config chooses, and the default
`local` is the same name on every machine, so one name on two machines is two devices. Each
line carries both (`machine` and `device`; a line written before lines carried `machine`
belongs to the machine its file is under), and everything that reads the history (the
scheduler's seed, `bench devices report`, the exporter) selects by both. Bounded: past
MAX_LINES the file is rewritten (atomically) keeping the newest KEEP_LINES, which is also how
the history forgets old data.

Outcomes: `ok` counts for the device; `failed` (any failure of the point), `transport` (an
attempt lost to the transport), `hole` and `pending` count against it. `pending` is a point
held ON the device past its expected duration (the median of that point's `duration_s` on
that device, from `ok` lines) by more than `policies.fitness.pending_after_s`; time a point
waits in benchlab's own queue is benchlab's, never the device's. An `ok` line carries the
point (a short hash of what identifies it, the repeat left out) and its duration, which is
where those expectations come from.
"""

from __future__ import annotations

import hashlib
import json
import statistics
import threading
from collections import deque
from pathlib import Path
from typing import Any

from benchlab.ids import check_id, utc_iso
from benchlab.layout import Store, append_json_lines, atomic_write_text
from benchlab.models import RunSpec
from benchlab.sweep.budget import base_key

HISTORY = "history.jsonl"
MAX_LINES = 2000
"""When a history file holds more lines than this, it is cut back to KEEP_LINES."""
KEEP_LINES = 1000
GOOD = frozenset({"ok"})
OUTCOMES = frozenset({"ok", "failed", "transport", "hole", "pending"})


def history_path(store: Store, machine_id: str) -> Path:
    """`runs/devices/<machine>/history.jsonl`."""
    return store.runs_dir / "devices" / check_id(machine_id, "machine id") / HISTORY


def read_history(path: Path, limit: int = KEEP_LINES) -> list[dict[str, Any]]:
    """The newest `limit` lines (oldest first); unreadable lines are skipped, not fatal."""
    lines: deque[dict[str, Any]] = deque(maxlen=max(limit, 1))
    try:
        with open(path, encoding="utf-8") as handle:
            for count, text in enumerate(handle):
                if count > MAX_LINES * 4:  # a file someone else let grow: read no further
                    break
                try:
                    line = json.loads(text)
                except ValueError:
                    continue
                if isinstance(line, dict) and line.get("outcome") in OUTCOMES:
                    lines.append(line)
    except OSError:
        return []
    return list(lines)


def line_machine(line: dict[str, Any], path: Path) -> str:
    """The machine a history line belongs to: its own field, else the file's machine dir."""
    machine = line.get("machine")
    return machine if isinstance(machine, str) and machine else path.parent.name


def device_lines(path: Path, machine_id: str, device: str) -> list[dict[str, Any]]:
    """The lines of (machine_id, device) in the history file at `path`, oldest first."""
    return [
        line
        for line in read_history(path)
        if line.get("device") == device and line_machine(line, path) == machine_id
    ]


def recent_outcomes(store: Store, machine_id: str, device: str, window: int) -> list[bool]:
    """The device's last `window` outcomes as good (True) or bad (False), oldest first."""
    lines = device_lines(history_path(store, machine_id), machine_id, device)
    return [line["outcome"] in GOOD for line in lines][-window:]


def point_key(spec: RunSpec) -> str:
    """A short stable name for a point with its repeat left out (every repeat of a point is
    expected to take as long), as `ok` history lines carry it."""
    return hashlib.sha256(base_key(spec).encode()).hexdigest()[:16]


def expected_durations(lines: list[dict[str, Any]]) -> dict[str, float]:
    """Median `duration_s` per point over the `ok` lines given (one device's)."""
    seen: dict[str, list[float]] = {}
    for line in lines:
        point, duration = line.get("point"), line.get("duration_s")
        if line.get("outcome") not in GOOD or not isinstance(point, str):
            continue
        if isinstance(duration, (int, float)) and duration >= 0:
            seen.setdefault(point, []).append(float(duration))
    return {point: statistics.median(values) for point, values in seen.items()}


def fitness_of(lines: list[dict[str, Any]], window: int) -> float | None:
    """Share of good outcomes among the last `window` lines; None when there are none."""
    recent = lines[-window:]
    if not recent:
        return None
    return sum(1 for line in recent if line.get("outcome") in GOOD) / len(recent)


class DeviceHistory:
    """The appender for one session. Thread-safe: workers record from their own threads.

    `record` only buffers; `flush` writes the buffered lines, one append per file. The
    concurrent scheduler flushes from its main thread at every poll (a quarter second), so
    the workers never wait on the disk for what is advisory; a crash loses at most the
    lines of that last quarter second, never a record.
    """

    def __init__(self, store: Store, experiment: str) -> None:
        self.store = store
        self.experiment = experiment
        self._lock = threading.Lock()
        self._buffer: dict[Path, list[dict[str, Any]]] = {}
        self._counts: dict[Path, int] = {}

    def record(
        self,
        machine_id: str,
        device: str,
        outcome: str,
        run_id: str | None,
        *,
        point: str | None = None,
        duration_s: float | None = None,
    ) -> None:
        """Buffer one outcome line of (machine_id, device) for the machine's history."""
        if outcome not in OUTCOMES:
            raise ValueError(f"unknown outcome {outcome!r}")
        line: dict[str, Any] = {
            "at": utc_iso(),
            "device": device,
            "experiment": self.experiment,
            "machine": machine_id,
            "outcome": outcome,
            "run_id": run_id,
        }
        if point is not None:
            line["point"] = point
        if duration_s is not None:
            line["duration_s"] = round(float(duration_s), 3)
        path = history_path(self.store, machine_id)
        with self._lock:
            self._buffer.setdefault(path, []).append(line)

    def flush(self) -> None:
        """Append what is buffered; cut a file back when it has grown past MAX_LINES."""
        with self._lock:
            buffered, self._buffer = self._buffer, {}
            for path, lines in sorted(buffered.items()):
                if path not in self._counts:
                    self._counts[path] = _count_lines(path)
                append_json_lines(path, lines)
                self._counts[path] += len(lines)
                if self._counts[path] > MAX_LINES:
                    kept = read_history(path, KEEP_LINES)
                    text = "".join(json.dumps(x, sort_keys=True) + "\n" for x in kept)
                    atomic_write_text(path, text)
                    self._counts[path] = len(kept)


def _count_lines(path: Path) -> int:
    try:
        with open(path, "rb") as handle:
            return sum(1 for _ in handle)
    except OSError:
        return 0
