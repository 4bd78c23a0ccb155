"""The scheduler's doubles: in-memory devices, a runner that writes nothing, a progress sink.

The devices are `benchlab.devices.fake.FakeDevice` (a real Transport with scripted
failures and an injected clock offset); the backend is the kit's `FakeBackend`, reporting a
constant rate because a FakeDevice prints no measurement of its own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from tests.kit.backend import FakeBackend

from benchlab.devices.fake import FakeBehaviour, FakeDevice
from benchlab.errors import DeviceError
from benchlab.layout import Store
from benchlab.models import FailureKind, GitInfo, RunRecord, RunSpec, SweepConfig
from benchlab.sweep.attempt import AttemptOutcome, Runner
from benchlab.sweep.history import DeviceHistory
from benchlab.sweep.journal import SweepJournal
from benchlab.sweep.progress import QuietProgress
from benchlab.sweep.schedule_log import ScheduleLog
from benchlab.sweep.scheduler import device_rank, seed_from_history
from benchlab.sweep.worker_state import SweepState

SCHEDULER_DECODE = 10.0
"""The decode rate every FakeDevice run reports through the kit backend."""


def real_runner(store: Path, config: SweepConfig) -> Runner:
    """The real Runner (records, journal, holes) over the kit backend, with no git lookup."""
    return Runner(
        store,
        config,
        experiment=config.experiment,
        git_info=GitInfo(),
        _backend=lambda _: FakeBackend(decode=SCHEDULER_DECODE),
    )


def fleet_factory(fleet: dict[str, FakeBehaviour]) -> Callable[[str, Any], FakeDevice]:
    """An `open_device` for the scheduler: one FakeDevice per id, its behaviour kept in
    `fleet` (created on first use) so a test can flip it while the sweep runs."""

    def open_device(device_id: str, config: Any) -> FakeDevice:
        return FakeDevice(device_id, fleet.setdefault(device_id, FakeBehaviour()))

    return open_device


class Events:
    """A Progress that keeps what it was told (thread-safe: workers report concurrently)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.done: list[tuple[int, int, str, str]] = []
        self.records: list[RunRecord] = []
        self._lock = threading.Lock()

    def point_done(self, done: int, total: int, spec: RunSpec, record: RunRecord) -> None:
        with self._lock:
            self.done.append((done, total, record.run_id, record.status))
            self.records.append(record)

    def event(self, line: str) -> None:
        with self._lock:
            self.lines.append(line)

    def close(self) -> None:
        pass

    def saw(self, prefix: str) -> list[str]:
        """The event lines that start with `prefix`, in order."""
        with self._lock:
            return [line for line in self.lines if line.startswith(prefix)]


class LightRunner:
    """Calls the device like Runner.attempt does, writes nothing: for property tests."""

    def __init__(self) -> None:
        self.completed: list[str] = []
        self._lock = threading.Lock()

    def attempt(
        self,
        spec: RunSpec,
        run_id: str,
        transport: Any,
        *,
        attempt: int = 1,
        attempts: int = 1,
        worker: str | None = None,
        warnings: Iterable[str] = (),
    ) -> AttemptOutcome:
        kind: FailureKind | None = None
        try:
            transport.call("run", {"argv": [run_id]}, timeout=30)
        except DeviceError:
            kind = "transport"
        with self._lock:
            if kind is None:
                self.completed.append(spec.device)
        record = RunRecord(
            run_id=run_id,
            spec_id=spec.spec_id,
            machine_id=spec.machine_id,
            device=spec.device,
            status="ok" if kind is None else "failed",
            failure_kind=kind,
            attempt=attempt,
            attempts=attempts,
            worker=worker,
            warnings=list(warnings),
            spec=spec,
        )
        return AttemptOutcome(record=record, failure_kind=kind)

    def write_hole(
        self,
        spec: RunSpec,
        run_id: str,
        reason: str,
        *,
        failure_kind: FailureKind | None = "transport",
    ) -> RunRecord:
        return RunRecord(
            run_id=run_id,
            spec_id=spec.spec_id,
            machine_id=spec.machine_id,
            device=spec.device,
            status="failed",
            failure_kind=failure_kind,
            error=f"not attempted: {reason}",
            spec=spec,
        )


def bare_sweep(store: Path, config: SweepConfig, clock: Callable[[], float]) -> SweepState:
    """A concurrent sweep's state with a runner that writes nothing and no transport, on an
    injected clock: for the pure logic of fitness and pending checks, driven by hand."""
    journal = SweepJournal(Store(store), config.experiment)
    journal.begin(False, None)
    state = SweepState(
        store=Store(store),
        config=config,
        runner=LightRunner(),
        journal=journal,
        progress=QuietProgress(),
        log=ScheduleLog(store / "runs" / "sweeps" / config.experiment),
        transport_factory=lambda *a: None,  # type: ignore[arg-type,return-value]
        clock=clock,
        history=DeviceHistory(Store(store), config.experiment),
    )
    state.rank = device_rank(config, [])
    seed_from_history(state)
    return state
