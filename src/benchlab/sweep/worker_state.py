"""The state of one sweep: every device's queue and workers, and the sweep's own counters.

`SweepState` is the one object the scheduler's parts share (ARCHITECTURE.md, The
scheduler): the dispatch (dispatch.py), the outcomes (outcomes.py), the assignment log
(recovery.py) and schedule.json (schedule_view.py) are functions that receive it, and every
field they change is changed under its `lock`. A sequential sweep is the same state with
`serial` set: one worker per device, one point at a time in the config's order.
"""

from __future__ import annotations

import statistics
import threading
import time
import uuid
from collections import Counter, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from benchlab.devices import open_transport
from benchlab.devices.base import Transport
from benchlab.errors import DeviceError
from benchlab.ids import utc_iso
from benchlab.layout import Store
from benchlab.models import (
    BreakerPolicy,
    DeviceConfig,
    FailureKind,
    RunRecord,
    RunSpec,
    SweepConfig,
)
from benchlab.sweep.assignments import AssignmentLog
from benchlab.sweep.attempt import AttemptOutcome
from benchlab.sweep.breaker import Breaker
from benchlab.sweep.budget import Budget, Durations, Rounds
from benchlab.sweep.fitness import FitnessBook
from benchlab.sweep.groups import Group, resolve
from benchlab.sweep.history import DeviceHistory, point_key
from benchlab.sweep.inject import InjectedQueue
from benchlab.sweep.lock import stop_path
from benchlab.sweep.placeholders import worker_instance_id
from benchlab.sweep.schedule_log import ScheduleLog

STOP_POLL_S = 0.25
"""How often the stop request file is looked at: at least every second, so `bench stop`
takes effect within one."""
MAX_WAIT_S = 1.0
"""No worker sleeps longer than this without looking at the state again."""
CLOCK_GRACE_S = 30.0
PENDING_CHECK_S = 5.0
"""How often points on the devices are looked at for overrunning their expected duration."""


@dataclass
class Point:
    spec: RunSpec
    run_id: str
    attempt: int = 1
    failures: int = 0
    last_error: str = ""
    started_at: float | None = None
    """When a worker took it off the queue (the scheduler's clock): time on the device."""
    overran: bool = False
    order: tuple[int, int] = (0, 0)
    """Its place in a sequential sweep's one line: (round, device rank); an injected point
    sorts before every other (a negative first member, later batches first)."""


@dataclass
class Job:
    point: Point
    probe: bool


@dataclass
class Drain:
    points: list[Point]


@dataclass
class DeviceState:
    id: str
    config: DeviceConfig
    breaker: Breaker
    cond: threading.Condition
    group: Group | None = None
    queue: deque[Point] = field(default_factory=deque)
    busy: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    trips: list[dict[str, Any]] = field(default_factory=list)
    round: int = 0
    has_rounds: bool = False
    workers: int = 0
    """Workers still taking points: an injected point goes only where one is left."""
    running: dict[str, Point] = field(default_factory=dict)
    """The points on the device now, by run id."""
    expected: dict[str, float] = field(default_factory=dict)
    """Expected seconds per point (history.point_key), from this device's own history."""

    @property
    def machine(self) -> str:
        return self.config.machine_id or self.id


def expected_seconds(device: DeviceState, spec: RunSpec) -> float:
    """Seconds `spec` is expected to take on `device`: its own past durations there, else
    the median over the device's other points (a new point on a slow device is slow too),
    else 0 (nothing known: the slack alone is the bound)."""
    known = device.expected.get(point_key(spec))
    if known is not None:
        return known
    return statistics.median(device.expected.values()) if device.expected else 0.0


def worker_id(device: str, index: int) -> str:
    return worker_instance_id(device, index)


def default_transport(device_id: str, config: DeviceConfig) -> Transport:
    return open_transport(device_id, config)


def close_quietly(transport: Transport) -> None:
    try:
        transport.close()
    except Exception:  # closing a broken connection must not hide the point's own outcome
        pass


class Unreachable(Transport):
    """Stands in for a transport that could not even be opened, so the attempt records it."""

    def __init__(self, device_id: str, error: DeviceError) -> None:
        super().__init__(device_id)
        self.error = error

    def call(self, verb: str, payload: dict[str, Any] | None = None, *, timeout: float) -> Any:
        raise self.error


def utc_iso_at(stamp: float) -> str:
    from datetime import datetime, timezone

    return utc_iso(datetime.fromtimestamp(stamp, tz=timezone.utc))


NO_BREAKER = BreakerPolicy(failure_threshold=2**62)
"""A sequential sweep's breaker: it never opens, so every point gets its own retries and no
device is drained (the breaker and failover are what `--concurrent` adds)."""


class PointRunner(Protocol):
    """What runs a point (`attempt.Runner`, guarded by the session) and records a hole."""

    def attempt(
        self,
        spec: RunSpec,
        run_id: str,
        transport: Transport,
        *,
        attempt: int = 1,
        attempts: int = 1,
        worker: str | None = None,
        warnings: Iterable[str] = (),
    ) -> AttemptOutcome: ...

    def write_hole(
        self,
        spec: RunSpec,
        run_id: str,
        reason: str,
        *,
        failure_kind: FailureKind | None = "transport",
    ) -> RunRecord: ...


class PointJournal(Protocol):
    """The session's journal as the scheduler reads it: run ids and what is done."""

    @property
    def stamp(self) -> str: ...

    def run_id(self, spec: RunSpec) -> str: ...

    def is_done(self, spec: RunSpec) -> bool: ...


TransportFactory = Callable[[str, DeviceConfig], Transport]


@dataclass(eq=False)
class SweepState:
    """Everything one sweep's workers and main thread share; see the module docstring.

    The first fields are given; the rest start empty and change under `lock` only (but for
    `progress_lock`'s own lines and the fields the main thread alone touches, said so).
    """

    store: Store
    config: SweepConfig
    runner: PointRunner
    journal: PointJournal
    progress: Any
    log: ScheduleLog
    transport_factory: TransportFactory
    clock: Callable[[], float]
    serial: bool = False
    """A sequential sweep: one worker per device, one point at a time, the config's order."""
    budget: Budget | None = None
    rounds: Rounds | None = None
    durations: Durations = field(default_factory=Durations)
    injected: InjectedQueue | None = None
    history: DeviceHistory | None = None
    machines: set[str] | None = None
    config_path: str | Path | None = None
    assignment_log: AssignmentLog | None = None
    sleep: Callable[[float], None] | None = None
    """The wait before a retry; None: the stop event's, so a stop request cuts it short."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    progress_lock: threading.Lock = field(default_factory=threading.Lock)
    stop_event: threading.Event = field(default_factory=threading.Event)
    groups: dict[str, Group] = field(default_factory=dict)
    devices: dict[str, DeviceState] = field(default_factory=dict)
    device_order: list[str] = field(default_factory=list)
    rank: dict[str, int] = field(default_factory=dict)
    """Each device's place in the config's order (a sequential sweep's tie-break)."""
    fitness: FitnessBook = field(init=False)
    max_in_flight: int | None = None
    attempts: int = 1
    started: bool = False
    """Workers are running: from then on an injected point needs one left on its device."""
    slot_next: int = 0
    in_flight: int = 0
    deadline_reached: bool = False
    enqueued: set[str] = field(default_factory=set)
    injected_batches: int = 0
    pending_checked: float = 0.0
    later: list[str] = field(default_factory=list)
    outstanding: int = 0
    total: int = 0
    done: int = 0
    stopping: bool = False
    stopped_by_request: bool = False
    crash: BaseException | None = None
    records: dict[str, RunRecord] = field(default_factory=dict)
    """Final records by run id, in the order they were settled."""
    assignments: list[dict[str, Any]] = field(default_factory=list)
    clocks: dict[str, dict[str, Any]] = field(default_factory=dict)
    wall_minus_mono: float = 0.0
    in_flight_written: dict[str, int] | None = None
    """Main thread only: what in_flight.json holds now."""
    assignments_warned: bool = False
    started_at: str = field(default_factory=utc_iso)
    ended_at: str | None = None
    session_id: str = ""
    """Unique per session (two sessions may start in one second, in one process)."""
    stop_file: Path = field(init=False)
    """`bench stop`'s request file, looked at before every point (a stat, nothing more)."""

    def __post_init__(self) -> None:
        policies = self.config.policies
        self.fitness = FitnessBook(policies.fitness)
        self.groups = resolve(self.config)
        breaker = NO_BREAKER if self.serial else policies.breaker
        for device_id, device_config in self.config.devices.items():
            self.devices[device_id] = DeviceState(
                id=device_id,
                config=device_config,
                breaker=Breaker(breaker, self.clock),
                cond=threading.Condition(self.lock),
                group=self.groups.get(device_config.resource_group or ""),
            )
        self.stop_file = stop_path(self.store, self.config.experiment)
        self.device_order = sorted(self.devices)
        self.rank = {device_id: index for index, device_id in enumerate(self.config.devices)}
        self.max_in_flight = 1 if self.serial else policies.max_in_flight
        self.attempts = policies.retries.attempts
        self.pending_checked = self.clock()
        self.wall_minus_mono = time.time() - self.clock()
        self.session_id = f"{self.started_at} {uuid.uuid4().hex[:12]}"
        for device_id in self.rounds.devices if self.rounds else ():
            self.devices[device_id].has_rounds = True

    # --- notifications (the only methods: each is a line or a wake-up, nothing more) ------

    def wake(self, device: DeviceState) -> None:
        """Called locked: wake this device's workers and, in a group, its members'; in a
        sequential sweep, the worker of the device that holds the next point (or every
        worker when no queue holds one: a round to refill, or nothing left)."""
        if self.serial:
            heads = [d for d in self.devices.values() if d.queue and d.workers > 0]
            if heads:
                min(heads, key=lambda d: d.queue[0].order).cond.notify_all()
            else:
                self.wake_all()
        elif device.group is None:
            device.cond.notify_all()
        else:
            for member in device.group.members:
                self.devices[member].cond.notify_all()

    def wake_all(self) -> None:
        for device in self.devices.values():
            device.cond.notify_all()

    def stop(self, *, requested: bool) -> None:
        with self.lock:
            self.stopping = True
            self.stop_event.set()
            self.stopped_by_request = self.stopped_by_request or requested
            self.wake_all()

    def event(self, line: str) -> None:
        with self.progress_lock:
            self.progress.event(line)

    def event_later(self, line: str) -> None:
        """An event from code that holds the state lock: kept, and printed by the next
        `flush_events` outside it, so the progress sink is never written while scheduling
        is held (and the lines keep their order)."""
        self.later.append(line)

    def flush_events(self) -> None:
        with self.lock:
            lines, self.later = self.later, []
        for line in lines:
            self.event(line)

    def point_done(self, spec: RunSpec, record: RunRecord) -> None:
        with self.progress_lock:
            self.progress.point_done(self.done, self.total, spec, record)
