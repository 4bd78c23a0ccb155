"""`bench run CONFIG --concurrent`: one queue per device, max_concurrency workers on each.

    RunSpecs ──┬─> queue[laptop] ── N workers ─┐
               ├─> queue[pi5]    ── 1 worker  ─┼─> Runner.attempt ──> record
               └─> queue[k8s-4]  ── N workers ─┘

The device is the thing measured, so nothing steals work from another queue; a point moves
only where the config declares devices interchangeable (`failover_to`), and then under its own
run id with a `failover-from:<device>` tag. Around that:

- resource groups hold `limit` jobs between their members and take turns round robin
  (groups.py); the turn goes to the next *ready* member even if its worker has not asked yet;
- only transport failures are retried (policies.retries.attempts), inside the device's
  circuit breaker (breaker.py); a record produced after retries says so in `warnings`;
- a drained device's remaining points become loud holes (Runner.write_hole) or move to a
  failover target chosen by fitness (fitness.py);
- every retry, failover, trip and hole goes to retries.jsonl / schedule.json (schedule_log.py);
- which worker takes and finishes which point goes to assignments.jsonl as it happens
  (assignments.py), so a session killed outright leaves them, and its resume reports the
  points that were on a worker when it died;
- the lock, the stamp, resume and the logs are the session's (session.py, shared with the
  sequential runner), and a stop request is honoured within a second: points in flight
  finish, the rest stay pending for resume;
- `policies.max_in_flight` caps the points running at once across every device (a global
  slot count: ARCHITECTURE.md, The scheduler), on top of each device's own max_concurrency;
- under a time budget (budget.py) each device moves on to its next round as soon as its
  queue runs dry, so no device waits for the slowest one, and nothing starts after the
  deadline or when its past duration cannot fit the grace;
- injected points (inject.py) are read past a watermark as the sweep runs and go to the
  front of their device's queue once due;
- fitness is seeded from each device's history, keyed by (machine, device), and every
  outcome is appended to it (history.py); a point held ON its device past its expected
  duration (that device's own history) by more than `fitness.pending_after_s` counts
  against the device, once. Time in benchlab's own queue never does: a 1-slot device with
  a long queue is slow to reach, not unfit.

All scheduling state lives in one `_Sweep` object behind one lock; each device has its own
condition variable on that lock, so a finished point wakes only the workers it concerns.
The sequential runner stays the reference: both produce the same set of records.
"""

from __future__ import annotations

import json
import statistics
import threading
import time
import uuid
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchlab.devices.base import Transport
from benchlab.errors import DeviceError
from benchlab.ids import utc_iso
from benchlab.layout import IN_FLIGHT, Store, atomic_write_bytes
from benchlab.models import DeviceConfig, RunRecord, RunSpec, SweepConfig
from benchlab.sweep.assignments import (
    AssignmentLog,
    by_session,
    held_at_end,
    read_assignments,
)
from benchlab.sweep.attempt import retry_warning
from benchlab.sweep.breaker import Breaker
from benchlab.sweep.budget import MAX_ROUNDS, Budget, Durations, Rounds
from benchlab.sweep.clocks import measure
from benchlab.sweep.fitness import FitnessBook
from benchlab.sweep.groups import Group, resolve
from benchlab.sweep.history import (
    GOOD,
    DeviceHistory,
    device_lines,
    expected_durations,
    history_path,
    point_key,
)
from benchlab.sweep.inject import InjectedQueue, pending_path, refusal, run_command
from benchlab.sweep.lock import stop_requested
from benchlab.sweep.order import order_points
from benchlab.sweep.progress import QuietProgress
from benchlab.sweep.result import SweepResult
from benchlab.sweep.schedule_log import ScheduleLog
from benchlab.sweep.session import SweepSession

STOP_POLL_S = 0.25
"""How often the stop request file is looked at (the brief: at least every second)."""
MAX_WAIT_S = 1.0
"""No worker sleeps longer than this without looking at the state again."""
CLOCK_GRACE_S = 30.0
PENDING_CHECK_S = 5.0
"""How often points on the devices are looked at for overrunning their expected duration."""


@dataclass
class _Point:
    spec: RunSpec
    run_id: str
    attempt: int = 1
    failures: int = 0
    last_error: str = ""
    started_at: float | None = None
    """When a worker took it off the queue (the scheduler's clock): time on the device."""
    overran: bool = False


@dataclass
class _Job:
    point: _Point
    probe: bool


@dataclass
class _Drain:
    points: list[_Point]


@dataclass
class _Device:
    id: str
    config: DeviceConfig
    breaker: Breaker
    cond: threading.Condition
    group: Group | None = None
    queue: deque[_Point] = field(default_factory=deque)
    busy: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    trips: list[dict[str, Any]] = field(default_factory=list)
    round: int = 0
    has_rounds: bool = False
    workers: int = 0
    """Workers still taking points: an injected point goes only where one is left."""
    running: dict[str, _Point] = field(default_factory=dict)
    """The points on the device now, by run id."""
    expected: dict[str, float] = field(default_factory=dict)
    """Expected seconds per point (history.point_key), from this device's own history."""

    @property
    def machine(self) -> str:
        return self.config.machine_id or self.id


def _expected(device: _Device, spec: RunSpec) -> float:
    """Seconds `spec` is expected to take on `device`: its own past durations there, else
    the median over the device's other points (a new point on a slow device is slow too),
    else 0 (nothing known: the slack alone is the bound)."""
    known = device.expected.get(point_key(spec))
    if known is not None:
        return known
    return statistics.median(device.expected.values()) if device.expected else 0.0


def _worker_id(device: str, index: int) -> str:
    from benchlab.sweep.placeholders import worker_instance_id

    return worker_instance_id(device, index)


def _default_transport(device_id: str, config: DeviceConfig) -> Transport:
    from benchlab.devices import open_transport

    return open_transport(device_id, config)


def _close_quietly(transport: Transport) -> None:
    try:
        transport.close()
    except Exception:  # closing a broken connection must not hide the point's own outcome
        pass


class _Unreachable(Transport):
    """Stands in for a transport that could not even be opened, so the attempt records it."""

    def __init__(self, device_id: str, error: DeviceError) -> None:
        super().__init__(device_id)
        self.error = error

    def call(self, verb: str, payload: dict[str, Any] | None = None, *, timeout: float) -> Any:
        raise self.error


class _Sweep:
    """The scheduling state of one concurrent sweep, and the workers' loop."""

    def __init__(
        self,
        *,
        store: Store,
        config: SweepConfig,
        runner: Any,
        journal: Any,
        progress: Any,
        log: ScheduleLog,
        transport_factory: Callable[[str, DeviceConfig], Transport],
        clock: Callable[[], float],
        budget: Budget | None = None,
        rounds: Rounds | None = None,
        durations: Durations | None = None,
        injected: InjectedQueue | None = None,
        history: DeviceHistory | None = None,
        machines: set[str] | None = None,
        config_path: str | Path | None = None,
        persist_assignments: bool = False,
    ) -> None:
        self.store = store
        self.config_path = config_path
        self.config = config
        self.runner = runner
        self.journal = journal
        self.progress = progress
        self.log = log
        self.transport_factory = transport_factory
        self.clock = clock
        self.stop_event = threading.Event()
        self.lock = threading.Lock()
        self.groups = resolve(config)
        self.devices: dict[str, _Device] = {}
        for device_id, device_config in config.devices.items():
            self.devices[device_id] = _Device(
                id=device_id,
                config=device_config,
                breaker=Breaker(config.policies.breaker, clock),
                cond=threading.Condition(self.lock),
                group=self.groups.get(device_config.resource_group or ""),
            )
        self.fitness = FitnessBook(config.policies.fitness)
        self.budget = budget
        self.rounds = rounds
        self.durations = durations or Durations()
        self.injected = injected
        self.history = history
        self.machines = machines
        self.max_in_flight = config.policies.max_in_flight
        self.started = False
        """Workers are running: from then on an injected point needs one left on its device."""
        self._device_order = sorted(self.devices)
        self._slot_next = 0
        self.in_flight = 0
        self.deadline_reached = False
        self.enqueued: set[str] = set()
        self._pending_checked = clock()
        self._later: list[str] = []
        if history is not None:
            self._seed_from_history()
        for device_id in rounds.devices if rounds else ():
            self.devices[device_id].has_rounds = True
        self.attempts = config.policies.retries.attempts
        self.outstanding = 0
        self.total = 0
        self.done = 0
        self.stopping = False
        self.stopped_by_request = False
        self.crash: BaseException | None = None
        self.records: dict[str, RunRecord] = {}
        self.assignments: list[dict[str, Any]] = []
        self.clocks: dict[str, dict[str, Any]] = {}
        self._progress_lock = threading.Lock()
        self._wall_minus_mono = time.time() - clock()
        self._in_flight_written: dict[str, int] | None = None
        self.started_at = utc_iso()
        self.ended_at: str | None = None
        self.session_id = f"{self.started_at} {uuid.uuid4().hex[:12]}"
        """Unique per session (two sessions may start in one second, in one process)."""
        self.assignment_log = (
            AssignmentLog(log.schedule_path.parent, self.session_id)
            if persist_assignments
            else None
        )
        self._assignments_warned = False

    # --- set-up ------------------------------------------------------------------------

    def _seed_from_history(self) -> None:
        """Each device's fitness window and expected durations from its own history lines
        (machine and device both: `local` on two machines is two devices)."""
        window = self.config.policies.fitness.window
        for device in self.devices.values():
            path = history_path(self.store, device.machine)
            lines = device_lines(path, device.machine, device.id)
            self.fitness.seed(device.id, [line["outcome"] in GOOD for line in lines][-window:])
            device.expected = expected_durations(lines)

    def enqueue(self, specs: list[RunSpec]) -> None:
        per_device: dict[str, list[RunSpec]] = {}
        for spec in specs:
            per_device.setdefault(spec.device, []).append(spec)
        policies = self.config.policies
        for device_id, device_specs in per_device.items():
            ordered = order_points(
                device_specs, policies.order, seed=policies.order_seed, device=device_id
            )
            queue = self.devices[device_id].queue
            for spec in ordered:
                point = _Point(spec, self.journal.run_id(spec))
                self.enqueued.add(point.run_id)
                queue.append(point)
        self.outstanding = self.total = len(specs)

    def measure_clocks(self) -> None:
        """Ask every device for its time, in parallel; a device that cannot answer is noted."""

        def one(device: _Device) -> None:
            try:
                transport = self._open(device, _worker_id(device.id, 0))
                try:
                    reading = measure(
                        transport, timeout=device.config.connect_timeout_s + CLOCK_GRACE_S
                    )
                finally:
                    _close_quietly(transport)
                result: dict[str, Any] = reading.as_json()
            except DeviceError as exc:
                result = {"error": str(exc)}
            except Exception as exc:  # a clock reading must never sink the sweep
                result = {"error": f"{type(exc).__name__}: {exc}"}
            with self.lock:
                self.clocks[device.id] = result

        threads = [threading.Thread(target=one, args=(d,), daemon=True) for d in self._active()]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for device_id, reading in sorted(self.clocks.items()):
            if "error" in reading:
                self._event(
                    f"CLOCK {device_id} could not be asked for its time: {reading['error']}"
                )
            elif not reading["agreeing"]:
                self._event(
                    f"CLOCK {device_id} is {reading['offset_s']:+.3f} s off "
                    f"(± {reading['uncertainty_s']:.3f} s)"
                )

    def _active(self) -> list[_Device]:
        """Devices with work, and the failover targets that work could move to."""
        wanted = {d.id for d in self.devices.values() if d.queue or d.has_rounds}
        for device_id in list(wanted):
            wanted.update(self.devices[device_id].config.failover_to)
        return [self.devices[d] for d in sorted(wanted)]

    def _open(self, device: _Device, worker: str) -> Transport:
        from benchlab.sweep.placeholders import resolve_device

        config = resolve_device(
            device.config, device=device.id, experiment=self.config.experiment, worker=worker
        )
        try:
            return self.transport_factory(device.id, config)
        except DeviceError as exc:
            return _Unreachable(device.id, exc)

    # --- the workers -------------------------------------------------------------------

    def run(self) -> None:
        threads = []
        for device in self._active():
            for index in range(device.config.max_concurrency):
                worker = _worker_id(device.id, index)
                thread = threading.Thread(
                    target=self._work, args=(device, worker), name=worker, daemon=True
                )
                threads.append(thread)
                device.workers += 1
        with self.lock:
            self.started = True
        for thread in threads:
            thread.start()
        try:
            while True:
                alive = [thread for thread in threads if thread.is_alive()]
                if not alive:
                    break
                if not self.stopping and stop_requested(self.store, self.config.experiment):
                    self._event(
                        f"STOP {self.config.experiment}: stop requested; points in flight "
                        "finish, the rest stay pending for resume"
                    )
                    self.stop(requested=True)
                self._take_injected()
                self._check_pending()
                self._flush_history()
                self._flush_events()
                self._publish_in_flight()
                alive[0].join(STOP_POLL_S)
        except BaseException:
            self.stop(requested=False)
            for thread in threads:
                thread.join()
            raise
        finally:
            self._flush_history()
            self._flush_events()
            self._publish_in_flight()
        if self.crash is not None:
            raise self.crash

    def stop(self, *, requested: bool) -> None:
        with self.lock:
            self.stopping = True
            self.stop_event.set()
            self.stopped_by_request = self.stopped_by_request or requested
            for device in self.devices.values():
                device.cond.notify_all()

    def _work(self, device: _Device, worker: str) -> None:
        transport: Transport | None = None
        try:
            while True:
                job = self._next(device)
                if job is None:
                    break
                if isinstance(job, _Drain):
                    self._drain(device, job.points)
                    continue
                if transport is None:
                    transport = self._open(device, worker)
                point = job.point
                self._persist_assignment(
                    "start",
                    run_id=point.run_id,
                    spec_id=point.spec.spec_id,
                    device=device.id,
                    machine_id=device.machine,
                    worker=worker,
                    attempt=point.attempt,
                    probe=job.probe,
                )
                started = getattr(self.progress, "point_started", None)
                if callable(started):
                    with self._progress_lock:
                        started(point.spec)
                warnings = []
                if point.failures:
                    warnings.append(retry_warning(point.attempt, self.attempts, device.id))
                outcome = self.runner.attempt(
                    point.spec,
                    point.run_id,
                    transport,
                    attempt=point.attempt,
                    attempts=self.attempts,
                    worker=worker,
                    warnings=warnings,
                )
                if outcome.failure_kind == "transport":
                    _close_quietly(transport)
                    transport = None
                self._finish(device, worker, job, outcome.record, outcome.failure_kind)
        except BaseException as exc:
            with self.lock:
                self.crash = self.crash or exc
            self.stop(requested=False)
        finally:
            if transport is not None:
                _close_quietly(transport)

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

    def _ready(self, device: _Device) -> bool:
        return (
            bool(device.queue)
            and device.busy < device.config.max_concurrency
            and (self.max_in_flight is None or self.in_flight < self.max_in_flight)
            and device.breaker.can_start()
        )

    def _next(self, device: _Device) -> _Job | _Drain | None:
        """Block until this device may start a point (or drain, or nothing is left)."""
        with self.lock:
            job = self._next_locked(device)
            if job is None:
                device.workers -= 1  # under the same lock: no injected point lands after this
        if self._later:
            self._flush_events()
        return job

    def _next_locked(self, device: _Device) -> _Job | _Drain | None:
        while True:
            if self.stopping:
                return None
            if device.breaker.state == "drained" and device.queue:
                points = list(device.queue)
                device.queue.clear()
                device.busy += 1
                return _Drain(points)
            if self.budget is not None:
                if self.budget.expired():
                    self._reach_deadline()
                    return None
                if not device.queue:
                    self._refill(device)
            if self.outstanding <= 0:
                self._wake_all()
                return None
            group = device.group
            if self._may_start(device) and self._slot_turn(device):
                if self.budget is not None and not self._fits(device.queue[0]):
                    return None
                probe = device.breaker.decide() == "probe"
                point = device.queue.popleft()
                point.started_at = self.clock()
                device.running[point.run_id] = point
                device.busy += 1
                self.in_flight += 1
                self._slot_next = (self._device_order.index(device.id) + 1) % len(
                    self._device_order
                )
                if group is not None:
                    group.start(device.id)
                self.fitness.started(device.id)
                return _Job(point, probe)
            timeout = MAX_WAIT_S
            ready_at = device.breaker.ready_at()
            if ready_at is not None:
                timeout = min(timeout, max(ready_at - self.clock(), 0.0) + 0.001)
            device.cond.wait(timeout)

    def _may_start(self, device: _Device) -> bool:
        """Ready, and its resource group's turn (called locked)."""
        group = device.group
        return self._ready(device) and (
            group is None or group.turn(lambda m: self._ready(self.devices[m])) == device.id
        )

    def _slot_turn(self, device: _Device) -> bool:
        """With policies.max_in_flight, global slots go round robin across devices, as a
        resource group's turns do: otherwise the worker that just freed a slot takes it
        again at once and one device runs its whole queue while the others wait."""
        if self.max_in_flight is None:
            return True
        count = len(self._device_order)
        for step in range(count):
            candidate = self.devices[self._device_order[(self._slot_next + step) % count]]
            if candidate.workers > 0 and self._may_start(candidate):
                return candidate.id == device.id
        return False

    # --- budgets, injected points, waiting points (all called locked unless said) ------

    def _fits(self, point: _Point) -> bool:
        """May `point` start under the budget? If not, it and what follows stay pending."""
        assert self.budget is not None
        estimate = self.durations.estimate(point.spec)
        if self.budget.fits(estimate):
            return True
        if not self.deadline_reached:
            self.deadline_reached = True
            self._event_later(
                f"DEADLINE {point.spec.device}: {point.run_id} usually takes "
                f"{estimate or 0:.1f} s, more than the {self.budget.left():.1f} s "
                f"(+ {self.budget.grace_s:g} s grace) left; not started, left pending"
            )
        self._wake_all()
        return False

    def _reach_deadline(self) -> None:
        if not self.deadline_reached:
            self.deadline_reached = True
            self._event_later(
                "DEADLINE the time budget is spent: points in flight finish, nothing new "
                "starts; re-run with --for to continue"
            )
        self._wake_all()

    def _refill(self, device: _Device) -> None:
        """The device's next round with work left, at the back of its queue (budget only)."""
        if not device.has_rounds or device.breaker.state == "drained" or self.rounds is None:
            return
        while device.round + 1 < MAX_ROUNDS:
            device.round += 1
            points = [
                _Point(spec, self.journal.run_id(spec))
                for spec in self.rounds.for_device(device.round, device.id)
            ]
            points = [
                p
                for p in points
                if p.run_id not in self.enqueued and not self.journal.is_done(p.spec)
            ]
            if points:
                self.enqueued.update(p.run_id for p in points)
                device.queue.extend(points)
                self.outstanding += len(points)
                self.total += len(points)
                self._event_later(
                    f"ROUND {device.round} {device.id}: {len(points)} point(s), "
                    f"{self.budget.left() if self.budget else 0:.0f} s of the budget left"
                )
                return

    def _take_injected(self) -> None:
        """Due injected points to the front of their device's queue (main thread, unlocked);
        one this session cannot run is refused in a line that says why and what would."""
        if self.injected is None:
            return
        for spec in self.injected.poll():
            run_id = self.journal.run_id(spec)
            with self.lock:
                device = self.devices.get(spec.device)
                if run_id in self.enqueued or self.journal.is_done(spec):
                    continue
                reason = self._not_runnable(spec)
                if reason is not None or device is None:
                    command = run_command(self.config_path, concurrent=True)
                    line = refusal(spec, reason or "no such device", command)
                else:
                    self.enqueued.add(run_id)
                    device.queue.appendleft(_Point(spec, run_id))
                    self.outstanding += 1
                    self.total += 1
                    self._wake(device)
                    line = f"INJECT {spec.spec_id} queued next on {spec.device}"
            self._event(line)
        for warning in self.injected.warnings:
            self._event(f"WARNING {warning}")
        self.injected.warnings.clear()

    def _not_runnable(self, spec: RunSpec) -> str | None:
        """Why this session cannot run an injected point, in words; None when it can."""
        device = self.devices.get(spec.device)
        if device is None:
            return f"device {spec.device!r} is not in the config"
        if device.machine != spec.machine_id:
            return (
                f"it was injected for machine {spec.machine_id!r}; device {spec.device!r} is "
                f"machine {device.machine!r} in the config now"
            )
        if self.machines is not None and spec.machine_id not in self.machines:
            return f"this session does not hold machine {spec.machine_id!r}"
        if device.breaker.state == "drained":
            return f"device {spec.device!r} was taken out of service in this session"
        if self.started and device.workers <= 0:
            return f"no worker of this session takes points on {spec.device!r} any more"
        return None

    def _check_pending(self) -> None:
        """Points held on their device past expectation count once against the device.

        Only time on the device counts (from the moment a worker took the point): a point
        waiting in benchlab's queue behind others is benchlab's wait, not the device's.
        """
        now = self.clock()
        if now - self._pending_checked < PENDING_CHECK_S:
            return
        self._pending_checked = now
        slack = self.config.policies.fitness.pending_after_s
        overdue: list[tuple[_Device, _Point]] = []
        with self.lock:
            for device in self.devices.values():
                for point in device.running.values():
                    if point.overran or point.started_at is None:
                        continue
                    expected = _expected(device, point.spec)
                    if now - point.started_at > expected + slack:
                        point.overran = True
                        self.fitness.outcome(device.id, False)
                        overdue.append((device, point))
        for device, point in overdue:
            self._remember(device, "pending", point.run_id)

    def _remember(
        self,
        device: _Device,
        outcome: str,
        run_id: str,
        *,
        spec: RunSpec | None = None,
        duration_s: float | None = None,
    ) -> None:
        """One line of the device's history (buffered; the main thread writes it); an ok
        point's key and duration go with it, for the device's expected durations."""
        if self.history is not None:
            self.history.record(
                device.machine,
                device.id,
                outcome,
                run_id,
                point=point_key(spec) if spec is not None else None,
                duration_s=duration_s,
            )

    def _flush_history(self) -> None:
        """Main thread: append the buffered history; advisory, so a full disk only warns."""
        if self.history is None:
            return
        try:
            self.history.flush()
        except OSError as exc:
            self._event(f"WARNING device history not written: {exc}")

    def _finish(
        self,
        device: _Device,
        worker: str,
        job: _Job,
        record: RunRecord,
        kind: str | None,
    ) -> None:
        point = job.point
        retry_in: float | None = None
        events: list[str] = []
        final = False
        with self.lock:
            device.running.pop(point.run_id, None)
            self.assignments.append(
                {
                    "run_id": point.run_id,
                    "spec_id": point.spec.spec_id,
                    "device": device.id,
                    "machine_id": device.machine,
                    "worker": worker,
                    "attempt": point.attempt,
                    "probe": job.probe,
                    "status": record.status,
                    "failure_kind": kind,
                }
            )
            if device.group is not None:
                device.group.finish()
            self.in_flight -= 1
            if self.max_in_flight is not None:
                self._wake_all()  # a global slot is free: any device may be next
            self.fitness.finished(device.id, ok=record.status == "ok")
            if record.status == "ok":
                self.durations.add(point.spec, record.timings.duration_s)
                if record.timings.duration_s is not None:
                    device.expected.setdefault(point_key(point.spec), record.timings.duration_s)
            if kind == "transport":
                error = record.error or "transport failure"
                point.failures += 1
                point.last_error = error
                device.outcomes["transport_failures"] += 1
                change = device.breaker.record_failure(error, probe=job.probe)
                events.extend(self._breaker_event(device, change, error))
                if point.attempt < self.attempts and not self.stopping:
                    action = "retry"
                    retry_in = self.config.policies.retries.backoff_s * 2 ** (point.attempt - 1)
                    if device.breaker.state == "drained":
                        action = "drain"
                else:
                    # Out of attempts, or a stop request: the failed record stays, and a
                    # resumed sweep retries the point.
                    action = "stopped" if self.stopping else "gave-up"
                    final = True
                self.log.append(
                    kind="transport",
                    device=device.id,
                    machine_id=device.machine,
                    spec_id=point.spec.spec_id,
                    run_id=point.run_id,
                    attempt=point.attempt,
                    attempts=self.attempts,
                    error=error,
                    action=action,
                    worker=worker,
                )
            else:
                change = device.breaker.record_success(probe=job.probe)
                events.extend(self._breaker_event(device, change, ""))
                final = True
            if final:
                device.busy -= 1
                self._settle(device, record)
            self._wake(device)
        for line in events:
            self._event(line)
        if events:
            self.write_schedule()
        if final:
            self._point_done(point.spec, record)
        # after the progress line, so history's disk write never reorders the [i/n] lines
        if kind == "transport":
            self._remember(device, "transport", point.run_id)
        elif final:
            if record.status == "ok":
                self._remember(
                    device,
                    "ok",
                    record.run_id,
                    spec=point.spec,
                    duration_s=record.timings.duration_s,
                )
            else:
                self._remember(device, "failed", record.run_id)
        self._persist_assignment(
            "finish",
            run_id=point.run_id,
            worker=worker,
            attempt=point.attempt,
            status=record.status,
            failure_kind=kind,
        )
        if final:
            return
        if retry_in:
            self.stop_event.wait(retry_in)
        with self.lock:
            point.attempt += 1
            device.queue.appendleft(point)  # a retry keeps its place at the head of the queue
            device.busy -= 1
            self._wake(device)

    def _breaker_event(self, device: _Device, change: str | None, error: str) -> list[str]:
        breaker = device.breaker
        wall = utc_iso_at(self._wall_minus_mono + self.clock())
        if change == "opened":
            device.trips.append(
                {"opened_at": wall, "error": error, "failures": breaker.consecutive_failures}
            )
            return [
                f"DOWN {device.id} taken out of service after "
                f"{breaker.consecutive_failures} transport failures: {error}"
            ]
        if change == "reopened":
            if device.trips:
                device.trips[-1]["probes_failed"] = device.trips[-1].get("probes_failed", 0) + 1
            return [f"DOWN {device.id} failed its recovery probe; cooldown restarts: {error}"]
        if change == "drained":
            targets = ", ".join(device.config.failover_to)
            where = f"move to {targets} or become holes" if targets else "become holes"
            if device.trips:
                device.trips[-1]["drained_at"] = wall
                device.trips[-1]["probes_failed"] = device.trips[-1].get("probes_failed", 0) + 1
            return [
                f"DRAIN {device.id} stayed down for {breaker.cooldowns_failed} cooldown(s); "
                f"its remaining points {where}"
            ]
        if change == "closed":
            if device.trips:
                device.trips[-1]["closed_at"] = wall
            return [f"UP {device.id} answered its recovery probe and is back in service"]
        return []

    def _settle(self, device: _Device, record: RunRecord) -> None:
        """A point reached its final record (called locked)."""
        device.outcomes[record.status] += 1
        self.records[record.run_id] = record
        self.outstanding -= 1
        self.done += 1
        if self.outstanding <= 0:
            self._wake_all()

    def _drain(self, device: _Device, points: list[_Point]) -> None:
        """Move each point to a failover target, or leave a loud hole."""
        reason = (
            f"device {device.id!r} was taken out of service after repeated transport failures "
            f"({device.breaker.last_error})"
        )
        from benchlab.sweep.expand import failover_spec

        for point in points:
            with self.lock:
                candidates = [
                    target
                    for target in device.config.failover_to
                    if self.devices[target].breaker.state != "drained"
                ]
                target = None
                if point.spec.failover_from is None and candidates:
                    target = self.fitness.choose(candidates, point=point.run_id, source=device.id)
            moved: _Point | None = None
            if target is not None:
                spec = failover_spec(self.config, point.spec, target)
                moved = _Point(spec, self.journal.run_id(spec))
                self.log.append(
                    device=device.id,
                    machine_id=device.machine,
                    spec_id=point.spec.spec_id,
                    run_id=point.run_id,
                    attempt=point.attempt,
                    error=device.breaker.last_error,
                    action="failover",
                    kind="failover",
                    to_device=target,
                    to_run_id=moved.run_id,
                )
                hole_reason = f"{reason}; moved to {target!r} as {moved.run_id}"
            else:
                hole_reason = reason
                self.log.append(
                    device=device.id,
                    machine_id=device.machine,
                    spec_id=point.spec.spec_id,
                    run_id=point.run_id,
                    attempt=point.attempt,
                    error=device.breaker.last_error,
                    action="hole" if not point.failures else "kept-failed",
                    kind="hole",
                )
            if point.failures:
                # It was attempted: its last failed record tells the truth; keep it.
                record = self._existing(point) or self.runner.write_hole(
                    point.spec, point.run_id, hole_reason
                )
            else:
                record = self.runner.write_hole(point.spec, point.run_id, hole_reason)
            self._remember(device, "hole" if not point.failures else "failed", point.run_id)
            with self.lock:
                device.outcomes["hole" if not point.failures else "failed"] += 1
                self.records[record.run_id] = record
                self.done += 1
                if moved is not None:
                    device.outcomes["moved"] += 1
                    target_device = self.devices[moved.spec.device]
                    if self.journal.is_done(moved.spec):
                        self.outstanding -= 1
                    else:
                        self.total += 1
                        self.enqueued.add(moved.run_id)
                        target_device.queue.append(moved)
                        self._wake(target_device)
                else:
                    self.outstanding -= 1
                if self.outstanding <= 0:
                    self._wake_all()
            self._point_done(point.spec, record)
        with self.lock:
            device.busy -= 1
            self._wake(device)
        self.write_schedule()

    def _existing(self, point: _Point) -> RunRecord | None:
        record = getattr(self.journal, "record", None)
        return record(point.spec) if callable(record) else None

    # --- notifications -----------------------------------------------------------------

    def _wake(self, device: _Device) -> None:
        """Called locked: wake this device's workers and, in a group, its members'."""
        if device.group is None:
            device.cond.notify_all()
            return
        for member in device.group.members:
            self.devices[member].cond.notify_all()

    def _wake_all(self) -> None:
        for device in self.devices.values():
            device.cond.notify_all()

    def _event(self, line: str) -> None:
        with self._progress_lock:
            self.progress.event(line)

    def _event_later(self, line: str) -> None:
        """An event from code that holds the state lock: kept, and printed by the next
        `_flush_events` outside it, so the progress sink is never written while scheduling
        is held (and the lines keep their order)."""
        self._later.append(line)

    def _flush_events(self) -> None:
        with self.lock:
            lines, self._later = self._later, []
        for line in lines:
            self._event(line)

    def _point_done(self, spec: RunSpec, record: RunRecord) -> None:
        with self._progress_lock:
            self.progress.point_done(self.done, self.total, spec, record)

    # --- schedule.json -----------------------------------------------------------------

    def schedule(self) -> dict[str, Any]:
        policies = self.config.policies
        with self.lock:
            devices = {
                device.id: {
                    "machine_id": device.machine,
                    "max_concurrency": device.config.max_concurrency,
                    "resource_group": device.config.resource_group,
                    "outcomes": dict(sorted(device.outcomes.items())),
                    "breaker": {
                        "state": device.breaker.state,
                        "down_since": (
                            utc_iso_at(self._wall_minus_mono + device.breaker.down_since)
                            if device.breaker.down_since is not None
                            else None
                        ),
                        "trips": list(device.trips),
                    },
                    "pending": len(device.queue),
                }
                for device in sorted(self.devices.values(), key=lambda d: d.id)
            }
            return {
                "experiment": self.config.experiment,
                "session": self.session_id,
                "stamp": self.journal.stamp,
                "started_at": self.started_at,
                "ended_at": self.ended_at,
                "policy": {
                    "order": policies.order,
                    "order_seed": policies.order_seed,
                    "retries": policies.retries.model_dump(),
                    "breaker": policies.breaker.model_dump(),
                    "fitness": policies.fitness.model_dump(),
                    "repeats": policies.repeats,
                    "max_in_flight": policies.max_in_flight,
                    "budget_s": self.budget.seconds if self.budget else None,
                },
                "groups": {
                    name: {"members": list(group.members), "limit": group.limit}
                    for name, group in sorted(self.groups.items())
                },
                "devices": devices,
                "clocks": dict(sorted(self.clocks.items())),
                "failover": {
                    "seed": policies.fitness.seed,
                    "choices": list(self.fitness.choices),
                },
                "assignments": sorted(self.assignments, key=lambda a: (a["run_id"], a["attempt"])),
                "points": {"total": self.total, "finished": self.done},
                "stopped": self.stopped_by_request,
                "deadline_reached": self.deadline_reached,
                "rounds": {d.id: d.round for d in self.devices.values() if d.has_rounds},
            }

    def write_schedule(self) -> None:
        self.log.write_schedule(self.schedule())


def utc_iso_at(stamp: float) -> str:
    from datetime import datetime, timezone

    return utc_iso(datetime.fromtimestamp(stamp, tz=timezone.utc))


def run_sweep_concurrent(
    store: Store | Path | str,
    config: SweepConfig,
    config_path: str | Path | None,
    *,
    fresh: bool = False,
    progress: Any = None,
    budget: Budget | None = None,
    _runner: Any = None,
    _journal: Any = None,
    _transport_factory: Callable[[str, DeviceConfig], Transport] | None = None,
    _clock: Callable[[], float] = time.monotonic,
    _measure_clocks: bool = True,
) -> SweepResult:
    """Run a sweep across its devices at once; returns the sequential runner's SweepResult.

    With `budget`, each device runs round after round (repeat k in round k) until the
    deadline. Seams (leading underscore, asv style) let tests and tools/perf inject a runner,
    a journal, transports and a clock.
    """
    from benchlab.sweep.expand import expand
    from benchlab.sweep.journal import as_store

    st = as_store(store)
    sink = progress if progress is not None else QuietProgress()
    started = time.monotonic()
    where = str(config_path or "sweep config")
    rounds = Rounds(config, where) if budget is not None else None
    specs = rounds.points(0) if rounds is not None else expand(config, where=where)
    result = SweepResult(experiment=config.experiment, total=len(specs))
    with SweepSession(
        st,
        config,
        config_path,
        specs=specs,
        fresh=fresh,
        progress=sink,
        result=result,
        journal=_journal,
        hold_all=budget is not None,
    ) as session:
        pending = session.pending
        if _runner is None:
            from benchlab.sweep.attempt import Runner

            _runner = Runner(st, config, experiment=config.experiment)
        sweep = _Sweep(
            store=st,
            config=config,
            runner=session.guard(_runner),
            journal=session.journal,
            progress=sink,
            log=session.log,
            transport_factory=_transport_factory or _default_transport,
            clock=_clock,
            budget=budget,
            rounds=rounds,
            durations=Durations.from_store(st, config) if budget is not None else None,
            injected=InjectedQueue(pending_path(st, config.experiment), config.experiment),
            history=DeviceHistory(st, config.experiment),
            machines=session.machines,
            config_path=config_path,
            persist_assignments=True,
        )
        sweep.recover_assignments()
        sweep.enqueue(pending)
        sweep._take_injected()  # due ones run now, even when every other point is done
        start = getattr(sink, "start", None)
        if callable(start):
            start(sweep.total)
        try:
            if _measure_clocks and sweep.total:
                sweep.measure_clocks()
            sweep.write_schedule()
            sweep.run()
        finally:
            sweep.stop_event.set()
            sweep.ended_at = utc_iso()
            sweep.write_schedule()
    result.records = sorted(sweep.records.values(), key=lambda r: r.run_id)
    result.stopped = sweep.stopped_by_request
    result.deadline_reached = sweep.deadline_reached
    result.rounds = max((d.round for d in sweep.devices.values()), default=0) + 1 if budget else 0
    result.left_pending = sum(len(d.queue) for d in sweep.devices.values())
    result.total = max(result.total, sweep.total + result.skipped)
    if sweep.injected is not None:
        result.injected_waiting = sweep.injected.waiting()
    result.elapsed_s = time.monotonic() - started
    return result
