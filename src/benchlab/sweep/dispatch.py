"""Which point a device's worker takes next: turns, budgets, injected points, overruns.

Functions of the sweep's one `SweepState` (worker_state.py); unless said, each runs under
its lock, so the choice of the next point, the budget and the pending checks all see one
consistent view. A concurrent sweep lets every ready device start (resource groups and
global slots taking turns); a sequential one (`state.serial`) starts one point at a time,
the lowest `Point.order` of all queues, so both run the same loop.
"""

from __future__ import annotations

from benchlab.models import RunSpec
from benchlab.sweep.budget import MAX_ROUNDS
from benchlab.sweep.inject import refusal, run_command
from benchlab.sweep.outcomes import remember
from benchlab.sweep.worker_state import (
    MAX_WAIT_S,
    PENDING_CHECK_S,
    DeviceState,
    Drain,
    Job,
    Point,
    SweepState,
    expected_seconds,
)

__all__ = ["check_pending", "check_stop", "new_point", "next_job", "take_injected"]


def new_point(state: SweepState, spec: RunSpec) -> Point:
    """A queued point with its run id and its place in a sequential sweep's order."""
    order = (spec.repeat or 0, state.rank.get(spec.device, len(state.rank)))
    return Point(spec, state.journal.run_id(spec), order=order)


def check_stop(state: SweepState) -> None:
    """Honour `bench stop` (unlocked): points in flight finish, the rest stay pending. The
    main thread looks at every poll and each worker before it takes a point, so no point
    starts after the request."""
    if state.stopping or not state.stop_file.exists():
        return
    with state.lock:
        first, state.stopping = not state.stopping, True  # another thread may have seen it
    if not first:
        return
    state.event(
        f"STOP {state.config.experiment}: stop requested; points in flight finish, the rest "
        "stay pending for resume"
    )
    state.stop(requested=True)


def next_job(state: SweepState, device: DeviceState) -> Job | Drain | None:
    """Block until this device may start a point (or drain, or nothing is left)."""
    check_stop(state)
    with state.lock:
        job = _next_locked(state, device)
        if job is None:
            device.workers -= 1  # under the same lock: no injected point lands after this
    if state.later:
        state.flush_events()
    return job


def _ready(state: SweepState, device: DeviceState) -> bool:
    return (
        bool(device.queue)
        and device.busy < device.config.max_concurrency
        and (state.max_in_flight is None or state.in_flight < state.max_in_flight)
        and device.breaker.can_start()
    )


def _next_locked(state: SweepState, device: DeviceState) -> Job | Drain | None:
    while True:
        if state.stopping:
            return None
        if device.breaker.state == "drained" and device.queue:
            points = list(device.queue)
            device.queue.clear()
            device.busy += 1
            return Drain(points)
        if state.budget is not None:
            if state.budget.expired():
                _reach_deadline(state)
                return None
            _refill_when_dry(state, device)
        if state.outstanding <= 0:
            state.wake_all()
            return None
        if _may_start(state, device) and _slot_turn(state, device):
            if state.budget is not None and not _fits(state, device.queue[0]):
                return None
            return _start(state, device)
        timeout = MAX_WAIT_S
        ready_at = device.breaker.ready_at()
        if ready_at is not None:
            timeout = min(timeout, max(ready_at - state.clock(), 0.0) + 0.001)
        device.cond.wait(timeout)


def _start(state: SweepState, device: DeviceState) -> Job:
    probe = device.breaker.decide() == "probe"
    point = device.queue.popleft()
    point.started_at = state.clock()
    device.running[point.run_id] = point
    device.busy += 1
    state.in_flight += 1
    state.slot_next = (state.device_order.index(device.id) + 1) % len(state.device_order)
    if device.group is not None:
        device.group.start(device.id)
    state.fitness.started(device.id)
    return Job(point, probe)


def _may_start(state: SweepState, device: DeviceState) -> bool:
    """Ready, and its turn: its resource group's (concurrent), or the whole sweep's
    (sequential: nothing else on a device, its retry waits included, and its head first)."""
    if state.serial:
        if not _ready(state, device) or any(d.busy for d in state.devices.values()):
            return False
        heads = [d for d in state.devices.values() if d.queue and d.workers > 0]
        return min(heads, key=lambda d: d.queue[0].order) is device
    group = device.group
    return _ready(state, device) and (
        group is None or group.turn(lambda m: _ready(state, state.devices[m])) == device.id
    )


def _slot_turn(state: SweepState, device: DeviceState) -> bool:
    """With policies.max_in_flight, global slots go round robin across devices, as a
    resource group's turns do: otherwise the worker that just freed a slot takes it
    again at once and one device runs its whole queue while the others wait."""
    if state.max_in_flight is None or state.serial:
        return True
    count = len(state.device_order)
    for step in range(count):
        candidate = state.devices[state.device_order[(state.slot_next + step) % count]]
        if candidate.workers > 0 and _may_start(state, candidate):
            return candidate.id == device.id
    return False


# --- budgets ---------------------------------------------------------------------------


def _fits(state: SweepState, point: Point) -> bool:
    """May `point` start under the budget? If not, it and what follows stay pending."""
    assert state.budget is not None
    estimate = state.durations.estimate(point.spec)
    if state.budget.fits(estimate):
        return True
    if not state.deadline_reached:
        state.deadline_reached = True
        state.event_later(
            f"DEADLINE {point.spec.device}: {point.run_id} usually takes "
            f"{estimate or 0:.1f} s, more than the {state.budget.left():.1f} s "
            f"(+ {state.budget.grace_s:g} s grace) left; not started, left pending"
        )
    state.wake_all()
    return False


def _reach_deadline(state: SweepState) -> None:
    if not state.deadline_reached:
        state.deadline_reached = True
        state.event_later(
            "DEADLINE the time budget is spent: points in flight finish, nothing new "
            "starts; re-run with --for to continue"
        )
    state.wake_all()


def _refill_when_dry(state: SweepState, device: DeviceState) -> None:
    """Under a budget, the next round once the queue runs dry: this device's own queue in a
    concurrent sweep (no device waits for the slowest), every queue in a sequential one
    (all of round k before any of round k + 1, as the config orders them)."""
    if not state.serial:
        if not device.queue:
            _refill(state, [device])
        return
    devices = list(state.devices.values())
    if not any(d.queue or d.busy for d in devices):
        _refill(state, devices)


def _refill(state: SweepState, devices: list[DeviceState]) -> None:
    """The devices' next round with work left, at the back of their queues."""
    rounds = state.rounds
    devices = [d for d in devices if d.has_rounds and d.breaker.state != "drained"]
    if rounds is None or not devices:
        return
    for _ in range(MAX_ROUNDS):
        if max(d.round for d in devices) + 1 >= MAX_ROUNDS:
            return
        lines = []
        for device in devices:
            device.round += 1
            points = [new_point(state, spec) for spec in rounds.for_device(device.round, device.id)]
            points = [
                p
                for p in points
                if p.run_id not in state.enqueued and not state.journal.is_done(p.spec)
            ]
            if not points:
                continue
            state.enqueued.update(p.run_id for p in points)
            device.queue.extend(points)
            state.outstanding += len(points)
            state.total += len(points)
            lines.append(
                f"ROUND {device.round} {device.id}: {len(points)} point(s), "
                f"{state.budget.left() if state.budget else 0:.0f} s of the budget left"
            )
        if lines:
            for line in lines:
                state.event_later(line)
            state.wake_all()
            return


# --- injected points and overruns --------------------------------------------------------


def take_injected(state: SweepState) -> None:
    """Due injected points to the front of their device's queue, in the file's order (main
    thread, unlocked); one this session cannot run is refused in a line that says why and
    what would."""
    if state.injected is None:
        return
    due = state.injected.poll()
    state.injected_batches += 1
    accepted: list[tuple[DeviceState, Point]] = []
    for index, spec in enumerate(due):
        run_id = state.journal.run_id(spec)
        with state.lock:
            device = state.devices.get(spec.device)
            if run_id in state.enqueued or state.journal.is_done(spec):
                continue
            reason = _not_runnable(state, spec)
            if reason is not None or device is None:
                command = run_command(state.config_path, concurrent=not state.serial)
                line = refusal(spec, reason or "no such device", command)
            else:
                state.enqueued.add(run_id)
                accepted.append(
                    (device, Point(spec, run_id, order=(-state.injected_batches, index)))
                )
                line = f"INJECT {spec.spec_id} queued next on {spec.device}"
        state.event(line)
    with state.lock:
        for device, point in reversed(accepted):  # front one by one keeps the file's order
            device.queue.appendleft(point)
            state.outstanding += 1
            state.total += 1
            state.wake(device)
    for warning in state.injected.warnings:
        state.event(f"WARNING {warning}")
    state.injected.warnings.clear()


def _not_runnable(state: SweepState, spec: RunSpec) -> str | None:
    """Why this session cannot run an injected point, in words; None when it can."""
    device = state.devices.get(spec.device)
    if device is None:
        return f"device {spec.device!r} is not in the config"
    if device.machine != spec.machine_id:
        return (
            f"it was injected for machine {spec.machine_id!r}; device {spec.device!r} is "
            f"machine {device.machine!r} in the config now"
        )
    if state.machines is not None and spec.machine_id not in state.machines:
        return f"this session does not hold machine {spec.machine_id!r}"
    if device.breaker.state == "drained":
        return f"device {spec.device!r} was taken out of service in this session"
    if state.started and device.workers <= 0:
        return f"no worker of this session takes points on {spec.device!r} any more"
    return None


def check_pending(state: SweepState) -> None:
    """Points held on their device past expectation count once against the device.

    Only time on the device counts (from the moment a worker took the point): a point
    waiting in benchlab's queue behind others is benchlab's wait, not the device's.
    """
    now = state.clock()
    if now - state.pending_checked < PENDING_CHECK_S:
        return
    state.pending_checked = now
    slack = state.config.policies.fitness.pending_after_s
    overdue: list[tuple[DeviceState, Point]] = []
    with state.lock:
        for device in state.devices.values():
            for point in device.running.values():
                if point.overran or point.started_at is None:
                    continue
                expected = expected_seconds(device, point.spec)
                if now - point.started_at > expected + slack:
                    point.overran = True
                    state.fitness.outcome(device.id, False)
                    overdue.append((device, point))
    for device, point in overdue:
        remember(state, device, "pending", point.run_id)
