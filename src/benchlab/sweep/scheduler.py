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

`_Sweep`'s methods are spread over mixins so no file grows past reading length: the
per-device state and timings (worker_state.py), picking the next point (dispatch.py),
settling a finished one (outcomes.py), the assignment log (recovery.py) and schedule.json
(schedule_view.py). They share the one object and its lock; none imports this module.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchlab.devices.base import Transport
from benchlab.errors import DeviceError
from benchlab.ids import utc_iso
from benchlab.layout import Store
from benchlab.models import DeviceConfig, RunRecord, RunSpec, SweepConfig
from benchlab.sweep.assignments import (
    AssignmentLog,
)
from benchlab.sweep.attempt import retry_warning
from benchlab.sweep.breaker import Breaker
from benchlab.sweep.budget import Budget, Durations, Rounds
from benchlab.sweep.clocks import measure
from benchlab.sweep.dispatch import _Dispatch
from benchlab.sweep.fitness import FitnessBook
from benchlab.sweep.groups import resolve
from benchlab.sweep.history import (
    GOOD,
    DeviceHistory,
    device_lines,
    expected_durations,
    history_path,
)
from benchlab.sweep.inject import InjectedQueue, pending_path
from benchlab.sweep.lock import stop_requested
from benchlab.sweep.order import order_points
from benchlab.sweep.outcomes import _Outcomes
from benchlab.sweep.progress import QuietProgress
from benchlab.sweep.recovery import _Recovery
from benchlab.sweep.result import SweepResult
from benchlab.sweep.schedule_log import ScheduleLog
from benchlab.sweep.schedule_view import _ScheduleView
from benchlab.sweep.session import SweepSession
from benchlab.sweep.worker_state import (
    CLOCK_GRACE_S,
    MAX_WAIT_S,
    PENDING_CHECK_S,
    STOP_POLL_S,
    _close_quietly,
    _default_transport,
    _Device,
    _Drain,
    _Job,
    _Point,
    _Unreachable,
    _worker_id,
    utc_iso_at,
)

__all__ = [
    "CLOCK_GRACE_S",
    "MAX_WAIT_S",
    "PENDING_CHECK_S",
    "STOP_POLL_S",
    "_Device",
    "_Drain",
    "_Job",
    "_Point",
    "_Sweep",
    "_Unreachable",
    "run_sweep_concurrent",
    "utc_iso_at",
]


class _Sweep(_Dispatch, _Outcomes, _Recovery, _ScheduleView):
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
