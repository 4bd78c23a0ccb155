"""The one sweep engine: `bench run CONFIG` and `bench run CONFIG --concurrent`.

One queue per device; `--concurrent` puts max_concurrency workers on each, and without it
the sweep is sequential: one worker per device and one point at a time across them all, in
the config's order (round by round, device by device, each device's points in policy
order), with no breaker and no failover. Both are this module's loop over one
`SweepState` (worker_state.py); what follows describes the concurrent case, which the
sequential one narrows.

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
- the lock, the stamp, resume and the logs are the session's (session.py), and a stop
  request is honoured before the next point starts and within a second: points in flight
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

All scheduling state lives in one `SweepState` behind one lock; each device has its own
condition variable on that lock, so a finished point wakes only the workers it concerns
(in a sequential sweep, those of the device that holds the next point). The parts are
functions of that state: picking the next point (dispatch.py), settling a finished one
(outcomes.py), the assignment log (recovery.py) and schedule.json (schedule_view.py);
none imports this module.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchlab.devices.base import Transport
from benchlab.errors import DeviceError
from benchlab.ids import utc_iso
from benchlab.layout import Store, guard_store
from benchlab.models import GitInfo, RunSpec, SweepConfig
from benchlab.sweep.assignments import AssignmentLog
from benchlab.sweep.attempt import Runner, retry_warning
from benchlab.sweep.budget import Budget, Durations, Rounds
from benchlab.sweep.clocks import measure
from benchlab.sweep.dispatch import check_pending, check_stop, new_point, next_job, take_injected
from benchlab.sweep.expand import expand
from benchlab.sweep.history import (
    GOOD,
    DeviceHistory,
    device_lines,
    expected_durations,
    history_path,
)
from benchlab.sweep.inject import InjectedQueue, pending_path
from benchlab.sweep.journal import as_store
from benchlab.sweep.order import order_points
from benchlab.sweep.outcomes import drain, finish, flush_history
from benchlab.sweep.placeholders import resolve_device
from benchlab.sweep.progress import QuietProgress
from benchlab.sweep.recovery import persist_assignment, publish_in_flight, recover_assignments
from benchlab.sweep.result import SweepResult
from benchlab.sweep.schedule_view import write_schedule
from benchlab.sweep.session import SweepSession
from benchlab.sweep.worker_state import (
    CLOCK_GRACE_S,
    STOP_POLL_S,
    DeviceState,
    Drain,
    PointJournal,
    PointRunner,
    SweepState,
    TransportFactory,
    Unreachable,
    close_quietly,
    default_transport,
    worker_id,
)

__all__ = ["SweepResult", "enqueue", "run_sweep", "run_sweep_concurrent"]


def run_sweep(
    store: Store | Path | str,
    config: SweepConfig,
    config_path: str | Path | None,
    *,
    concurrent: bool = False,
    fresh: bool = False,
    progress: Any = None,
    budget: Budget | None = None,
    _runner: PointRunner | None = None,
    _journal: PointJournal | None = None,
    _transport_factory: TransportFactory | None = None,
    _backend: Callable[[str], Any] | None = None,
    _git_info: GitInfo | None = None,
    _sleep: Callable[[float], None] | None = None,
    _clock: Callable[[], float] = time.monotonic,
    _measure_clocks: bool | None = None,
) -> SweepResult:
    """Run every pending point of `config`; return the records this invocation produced.

    Sequential unless `concurrent`. With `budget`, round after round (repeat k in round k)
    until the deadline. Seams (leading underscore, asv style) let tests and tools/perf
    inject a runner or its backend, a journal, transports, the retry wait and a clock;
    the devices' clocks are read (schedule.json) in a concurrent sweep unless told.
    """
    st = as_store(store)
    sink = progress if progress is not None else QuietProgress()
    started = time.monotonic()
    where = str(config_path or "sweep config")
    rounds = Rounds(config, where) if budget is not None else None
    specs = rounds.points(0) if rounds is not None else expand(config, where=where)
    result = SweepResult(experiment=config.experiment, total=len(specs))
    # The sweep's own state (lock, schedule, retries, assignments, history) is guarded from
    # its store as `bench run`'s is, for a caller of this API too (ARCHITECTURE.md, One
    # reader and one writer path).
    with (
        guard_store(st.root),
        SweepSession(
            st,
            config,
            config_path,
            specs=specs,
            fresh=fresh,
            progress=sink,
            result=result,
            journal=_journal,
            hold_all=budget is not None,
        ) as session,
    ):
        runner = _runner or Runner(
            st, config, experiment=config.experiment, git_info=_git_info, _backend=_backend
        )
        state = SweepState(
            store=st,
            config=config,
            runner=session.guard(runner),
            journal=session.journal,
            progress=sink,
            log=session.log,
            transport_factory=_transport_factory or default_transport,
            clock=_clock,
            serial=not concurrent,
            budget=budget,
            rounds=rounds,
            durations=Durations.from_store(st, config) if budget is not None else Durations(),
            injected=InjectedQueue(pending_path(st, config.experiment), config.experiment),
            history=DeviceHistory(st, config.experiment),
            machines=session.machines,
            config_path=config_path,
            sleep=_sleep,
        )
        state.assignment_log = AssignmentLog(session.log.schedule_path.parent, state.session_id)
        state.rank = device_rank(config, specs)
        seed_from_history(state)
        recover_assignments(state)
        enqueue(state, session.pending)
        take_injected(state)  # due ones run now, even when every other point is done
        start = getattr(sink, "start", None)
        if callable(start):
            start(state.total)
        clocks = concurrent if _measure_clocks is None else _measure_clocks
        try:
            if clocks and state.total:
                measure_clocks(state)
            write_schedule(state)
            run_workers(state)
        finally:
            state.stop_event.set()
            state.ended_at = utc_iso()
            write_schedule(state)
    records = list(state.records.values())
    result.records = records if state.serial else sorted(records, key=lambda r: r.run_id)
    result.stopped = state.stopped_by_request
    result.deadline_reached = state.deadline_reached
    result.rounds = max((d.round for d in state.devices.values()), default=0) + 1 if budget else 0
    result.left_pending = sum(len(d.queue) for d in state.devices.values())
    result.total = max(result.total, state.total + result.skipped)
    if state.injected is not None:
        result.injected_waiting = state.injected.waiting()
    result.elapsed_s = time.monotonic() - started
    return result


def run_sweep_concurrent(
    store: Store | Path | str, config: SweepConfig, config_path: str | Path | None, **kw: Any
) -> SweepResult:
    """`run_sweep(..., concurrent=True)`: `bench run --concurrent`."""
    return run_sweep(store, config, config_path, concurrent=True, **kw)


# --- set-up ------------------------------------------------------------------------------


def device_rank(config: SweepConfig, specs: list[RunSpec]) -> dict[str, int]:
    """Devices in the order the expanded matrix first names them (the sequential order),
    then the config's others (an injected point may name one)."""
    named = [*dict.fromkeys(spec.device for spec in specs), *config.devices]
    return {device: index for index, device in enumerate(dict.fromkeys(named))}


def seed_from_history(state: SweepState) -> None:
    """Each device's fitness window and expected durations from its own history lines
    (machine and device both: `local` on two machines is two devices)."""
    window = state.config.policies.fitness.window
    for device in state.devices.values():
        path = history_path(state.store, device.machine)
        lines = device_lines(path, device.machine, device.id)
        state.fitness.seed(device.id, [line["outcome"] in GOOD for line in lines][-window:])
        device.expected = expected_durations(lines)


def enqueue(state: SweepState, specs: list[RunSpec]) -> None:
    """The pending points into their devices' queues, each device's in policy order."""
    per_device: dict[str, list[RunSpec]] = {}
    for spec in specs:
        per_device.setdefault(spec.device, []).append(spec)
    policies = state.config.policies
    for device_id, device_specs in per_device.items():
        ordered = order_points(
            device_specs, policies.order, seed=policies.order_seed, device=device_id
        )
        queue = state.devices[device_id].queue
        for spec in ordered:
            point = new_point(state, spec)
            state.enqueued.add(point.run_id)
            queue.append(point)
    state.outstanding = state.total = len(specs)


def measure_clocks(state: SweepState) -> None:
    """Ask every device for its time, in parallel; a device that cannot answer is noted."""

    def one(device: DeviceState) -> None:
        try:
            transport = _open(state, device, worker_id(device.id, 0))
            try:
                reading = measure(
                    transport, timeout=device.config.connect_timeout_s + CLOCK_GRACE_S
                )
            finally:
                close_quietly(transport)
            result: dict[str, Any] = reading.as_json()
        except DeviceError as exc:
            result = {"error": str(exc)}
        except Exception as exc:  # a clock reading must never sink the sweep
            result = {"error": f"{type(exc).__name__}: {exc}"}
        with state.lock:
            state.clocks[device.id] = result

    threads = [threading.Thread(target=one, args=(d,), daemon=True) for d in _active(state)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for device_id, reading in sorted(state.clocks.items()):
        if "error" in reading:
            state.event(f"CLOCK {device_id} could not be asked for its time: {reading['error']}")
        elif not reading["agreeing"]:
            state.event(
                f"CLOCK {device_id} is {reading['offset_s']:+.3f} s off "
                f"(± {reading['uncertainty_s']:.3f} s)"
            )


def _active(state: SweepState) -> list[DeviceState]:
    """Devices with work, and the failover targets that work could move to; in a sequential
    sweep every device (a worker waiting costs nothing, and an injected point may come)."""
    if state.serial:
        return [state.devices[d] for d in sorted(state.devices)]
    wanted = {d.id for d in state.devices.values() if d.queue or d.has_rounds}
    for device_id in list(wanted):
        wanted.update(state.devices[device_id].config.failover_to)
    return [state.devices[d] for d in sorted(wanted)]


def _open(state: SweepState, device: DeviceState, worker: str) -> Transport:
    config = resolve_device(
        device.config, device=device.id, experiment=state.config.experiment, worker=worker
    )
    try:
        return state.transport_factory(device.id, config)
    except DeviceError as exc:
        return Unreachable(device.id, exc)


# --- the workers -------------------------------------------------------------------------


def run_workers(state: SweepState) -> None:
    """Start the workers and watch them from this (the main) thread: stop requests,
    injected points, overruns, and the files observers read."""
    threads = []
    for device in _active(state):
        for index in range(1 if state.serial else device.config.max_concurrency):
            worker = worker_id(device.id, index)
            thread = threading.Thread(
                target=_work, args=(state, device, worker), name=worker, daemon=True
            )
            threads.append(thread)
            device.workers += 1
    with state.lock:
        state.started = True
    for thread in threads:
        thread.start()
    try:
        while True:
            alive = [thread for thread in threads if thread.is_alive()]
            if not alive:
                break
            check_stop(state)
            take_injected(state)
            check_pending(state)
            _flush(state)
            alive[0].join(STOP_POLL_S)
    except BaseException:
        state.stop(requested=False)
        for thread in threads:
            thread.join()
        raise
    finally:
        _flush(state)
    if state.crash is not None:
        raise state.crash


def _flush(state: SweepState) -> None:
    flush_history(state)
    state.flush_events()
    publish_in_flight(state)


def _work(state: SweepState, device: DeviceState, worker: str) -> None:
    transport: Transport | None = None
    try:
        while True:
            job = next_job(state, device)
            if job is None:
                break
            if isinstance(job, Drain):
                drain(state, device, job.points)
                continue
            if transport is None:
                transport = _open(state, device, worker)
            point = job.point
            persist_assignment(
                state,
                "start",
                run_id=point.run_id,
                spec_id=point.spec.spec_id,
                device=device.id,
                machine_id=device.machine,
                worker=worker,
                attempt=point.attempt,
                probe=job.probe,
            )
            started = getattr(state.progress, "point_started", None)
            if callable(started):
                with state.progress_lock:
                    started(point.spec)
            warnings = []
            if point.failures:
                warnings.append(retry_warning(point.attempt, state.attempts, device.id))
            outcome = state.runner.attempt(
                point.spec,
                point.run_id,
                transport,
                attempt=point.attempt,
                attempts=state.attempts,
                worker=worker,
                warnings=warnings,
            )
            if outcome.failure_kind == "transport":
                close_quietly(transport)
                transport = None
            finish(state, device, worker, job, outcome.record, outcome.failure_kind)
    except BaseException as exc:
        with state.lock:
            state.crash = state.crash or exc
        state.stop(requested=False)
    finally:
        if transport is not None:
            close_quietly(transport)
