"""Injecting points into a sweep, and the watermark its scheduler reads them by (ARCHITECTURE.md,
The scheduler).

*What* to run is separate from *when* it runs: pending trials live in storage, new ones can be
injected by hand (repeats, a point someone wants now), each may carry a future
timestamp, and the scheduler retrieves them by a watermark. Here:

- `bench inject CONFIG AXIS=VALUE ... [--after 10m | --at ISO]` expands the config's matrix
  with those axes fixed and appends each point, as a full RunSpec with its `not_before` time
  (UTC), to `runs/sweeps/<experiment>/pending.jsonl`: appended and fsynced line by line, the
  durable queue of injected points;
- a running sweep (sequential or concurrent) polls that file from its *watermark*, the byte
  offset it has read up to, so each poll reads only what was appended since (complete lines
  only: a line being written is left for the next poll). A point whose `not_before` has not
  come yet is held in memory and released when it has; a released point goes to the front
  of its device's queue, under the sweep's stamp, so it gets a run id like any other;
- the watermark lives only as long as the session: a new session reads the file from the
  start, and every injected point that is not done yet (no ok record) is pending again.
  That is what makes the file the durable queue: a sweep killed before it ran an injected
  point runs it on resume, and one that ran it skips it;
- a session locks the machines of the due injected points too (`due_points`), so the next
  `bench run` of a sweep that had finished runs them, sequential or `--concurrent`; a point
  no session can run (its device is gone from the config, its machine differs) is refused
  loudly, with the reason and the command that would run it (`refusal`), never dropped.
"""

from __future__ import annotations

import heapq
import itertools
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from benchlab.ids import epoch_of, utc_iso
from benchlab.layout import Store, append_json_lines
from benchlab.models import RunSpec

PENDING = "pending.jsonl"
MAX_READ_BYTES = 1024 * 1024
"""At most this much of pending.jsonl is read per poll; the rest waits for the next one."""
MAX_READS = 1024
"""`due_points` reads at most this many chunks (1 GiB): a bound, not a size anyone reaches."""


def pending_path(store: Store, experiment: str) -> Path:
    return store.sweep_dir(experiment) / PENDING


def append_points(path: Path, specs: list[RunSpec], not_before: str | None) -> list[dict[str, Any]]:
    """Append one line per point; each line is whole on disk before the next is written."""
    lines = [
        {"at": utc_iso(), "not_before": not_before, "spec": spec.model_dump(mode="json")}
        for spec in specs
    ]
    for line in lines:
        append_json_lines(path, [line])
    return lines


class InjectedQueue:
    """pending.jsonl as one session reads it: a byte watermark and the points held back."""

    def __init__(
        self, path: Path, experiment: str, *, wall: Callable[[], float] = time.time
    ) -> None:
        self.path = path
        self.experiment = experiment
        self.wall = wall
        self.watermark = 0
        self.warnings: list[str] = []
        self._held: list[tuple[float, int, RunSpec]] = []
        self._order = itertools.count()

    def _read_new(self) -> None:
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self.watermark)
                chunk = handle.read(MAX_READ_BYTES)
        except OSError:
            return
        end = chunk.rfind(b"\n")
        if end < 0:
            return
        for number, raw in enumerate(chunk[: end + 1].splitlines()):
            self._take(raw, number)
        self.watermark += end + 1

    def _take(self, raw: bytes, number: int) -> None:
        where = f"{self.path} (byte {self.watermark}, line {number + 1} of this read)"
        try:
            line = json.loads(raw)
            spec = RunSpec.model_validate(line["spec"])
        except (ValueError, KeyError, TypeError, ValidationError) as exc:
            self.warnings.append(f"{where}: not an injected point, skipped: {exc}")
            return
        if spec.experiment != self.experiment:
            self.warnings.append(
                f"{where}: a point of experiment {spec.experiment!r}, not {self.experiment!r}; "
                "skipped"
            )
            return
        due = epoch_of(line.get("not_before")) or 0.0
        heapq.heappush(self._held, (due, next(self._order), spec))

    def poll(self) -> list[RunSpec]:
        """Read past the watermark; return the points whose time has come, oldest due first."""
        self._read_new()
        now = self.wall()
        due: list[RunSpec] = []
        while self._held and self._held[0][0] <= now:
            due.append(heapq.heappop(self._held)[2])
        return due

    def waiting(self) -> int:
        """Points read but not due yet (they stay in the file for a later session)."""
        return len(self._held)


def due_points(path: Path, experiment: str) -> list[RunSpec]:
    """Every injected point of `experiment` in the file that is due now (done or not)."""
    queue = InjectedQueue(path, experiment)
    due: list[RunSpec] = []
    for _ in range(MAX_READS):
        before = queue.watermark
        due.extend(queue.poll())
        if queue.watermark == before:
            break
    return due


def refusal(spec: RunSpec, reason: str, command: str) -> str:
    """The one line a runner prints for an injected point it cannot run: why, and how."""
    return (
        f"INJECT {spec.spec_id}: not run: {reason}; it stays in {PENDING}: run it with `{command}`"
    )


def run_command(config_path: str | Path | None, *, concurrent: bool) -> str:
    """The `bench run` that would take an injected point (config path as the session got it)."""
    where = str(config_path) if config_path is not None else "CONFIG"
    return f"bench run {where}{' --concurrent' if concurrent else ''}"
