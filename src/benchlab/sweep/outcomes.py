"""What happens once a point ends: history, retries, breaker events and draining a device.

Functions of the sweep's one `SweepState` (worker_state.py): a finished point's record, its
retry and the device's breaker are settled here, for a sequential sweep and a concurrent
one alike.
"""

from __future__ import annotations

from benchlab.models import RunRecord, RunSpec
from benchlab.sweep.expand import failover_spec
from benchlab.sweep.history import point_key
from benchlab.sweep.recovery import persist_assignment
from benchlab.sweep.schedule_view import write_schedule
from benchlab.sweep.worker_state import DeviceState, Job, Point, SweepState, utc_iso_at

__all__ = ["drain", "finish", "flush_history", "remember"]


def remember(
    state: SweepState,
    device: DeviceState,
    outcome: str,
    run_id: str,
    *,
    spec: RunSpec | None = None,
    duration_s: float | None = None,
) -> None:
    """One line of the device's history (buffered; the main thread writes it); an ok
    point's key and duration go with it, for the device's expected durations."""
    if state.history is not None:
        state.history.record(
            device.machine,
            device.id,
            outcome,
            run_id,
            point=point_key(spec) if spec is not None else None,
            duration_s=duration_s,
        )


def flush_history(state: SweepState) -> None:
    """Main thread: append the buffered history; advisory, so a full disk only warns."""
    if state.history is None:
        return
    try:
        state.history.flush()
    except OSError as exc:
        state.event(f"WARNING device history not written: {exc}")


def finish(
    state: SweepState,
    device: DeviceState,
    worker: str,
    job: Job,
    record: RunRecord,
    kind: str | None,
) -> None:
    point = job.point
    retry_in: float | None = None
    events: list[str] = []
    final = False
    with state.lock:
        device.running.pop(point.run_id, None)
        state.assignments.append(
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
        state.in_flight -= 1
        if state.max_in_flight is not None and not state.serial:
            state.wake_all()  # a global slot is free: any device may be next
        state.fitness.finished(device.id, ok=record.status == "ok")
        if record.status == "ok":
            state.durations.add(point.spec, record.timings.duration_s)
            if record.timings.duration_s is not None:
                device.expected.setdefault(point_key(point.spec), record.timings.duration_s)
        if kind == "transport":
            error = record.error or "transport failure"
            point.failures += 1
            point.last_error = error
            device.outcomes["transport_failures"] += 1
            change = device.breaker.record_failure(error, probe=job.probe)
            events.extend(_breaker_event(state, device, change, error))
            if point.attempt < state.attempts and not state.stopping:
                action = "retry"
                retry_in = state.config.policies.retries.backoff_s * 2 ** (point.attempt - 1)
                if device.breaker.state == "drained":
                    action = "drain"
            else:
                # Out of attempts, or a stop request: the failed record stays, and a
                # resumed sweep retries the point.
                action = "stopped" if state.stopping else "gave-up"
                final = True
            state.log.append(
                kind="transport",
                device=device.id,
                machine_id=device.machine,
                spec_id=point.spec.spec_id,
                run_id=point.run_id,
                attempt=point.attempt,
                attempts=state.attempts,
                error=error,
                action=action,
                worker=worker,
            )
        else:
            change = device.breaker.record_success(probe=job.probe)
            events.extend(_breaker_event(state, device, change, ""))
            final = True
        if final:
            device.busy -= 1
            _settle(state, device, record)
        state.wake(device)
    for line in events:
        state.event(line)
    if events:
        write_schedule(state)
    if final:
        state.point_done(point.spec, record)
    # after the progress line, so history's disk write never reorders the [i/n] lines
    if kind == "transport":
        remember(state, device, "transport", point.run_id)
    elif final:
        if record.status == "ok":
            remember(
                state,
                device,
                "ok",
                record.run_id,
                spec=point.spec,
                duration_s=record.timings.duration_s,
            )
        else:
            remember(state, device, "failed", record.run_id)
    persist_assignment(
        state,
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
        (state.sleep or state.stop_event.wait)(retry_in)
    with state.lock:
        point.attempt += 1
        device.queue.appendleft(point)  # a retry keeps its place at the head of the queue
        device.busy -= 1
        state.wake(device)


def _breaker_event(
    state: SweepState, device: DeviceState, change: str | None, error: str
) -> list[str]:
    breaker = device.breaker
    wall = utc_iso_at(state.wall_minus_mono + state.clock())
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


def _settle(state: SweepState, device: DeviceState, record: RunRecord) -> None:
    """A point reached its final record (called locked)."""
    device.outcomes[record.status] += 1
    state.records[record.run_id] = record
    state.outstanding -= 1
    state.done += 1
    if state.outstanding <= 0:
        state.wake_all()


def drain(state: SweepState, device: DeviceState, points: list[Point]) -> None:
    """Move each point to a failover target, or leave a loud hole."""
    reason = (
        f"device {device.id!r} was taken out of service after repeated transport failures "
        f"({device.breaker.last_error})"
    )
    for point in points:
        with state.lock:
            candidates = [
                target
                for target in device.config.failover_to
                if state.devices[target].breaker.state != "drained"
            ]
            target = None
            if point.spec.failover_from is None and candidates:
                target = state.fitness.choose(candidates, point=point.run_id, source=device.id)
        moved: Point | None = None
        hole_reason = reason
        action: dict[str, str] = {
            "action": "hole" if not point.failures else "kept-failed",
            "kind": "hole",
        }
        if target is not None:
            spec = failover_spec(state.config, point.spec, target)
            moved = Point(spec, state.journal.run_id(spec))
            action = {
                "action": "failover",
                "kind": "failover",
                "to_device": target,
                "to_run_id": moved.run_id,
            }
            hole_reason = f"{reason}; moved to {target!r} as {moved.run_id}"
        state.log.append(
            device=device.id,
            machine_id=device.machine,
            spec_id=point.spec.spec_id,
            run_id=point.run_id,
            attempt=point.attempt,
            error=device.breaker.last_error,
            **action,
        )
        if point.failures:
            # It was attempted: its last failed record tells the truth; keep it.
            record = _existing(state, point) or state.runner.write_hole(
                point.spec, point.run_id, hole_reason
            )
        else:
            record = state.runner.write_hole(point.spec, point.run_id, hole_reason)
        remember(state, device, "hole" if not point.failures else "failed", point.run_id)
        with state.lock:
            device.outcomes["hole" if not point.failures else "failed"] += 1
            state.records[record.run_id] = record
            state.done += 1
            if moved is not None:
                device.outcomes["moved"] += 1
                target_device = state.devices[moved.spec.device]
                if state.journal.is_done(moved.spec):
                    state.outstanding -= 1
                else:
                    state.total += 1
                    state.enqueued.add(moved.run_id)
                    target_device.queue.append(moved)
                    state.wake(target_device)
            else:
                state.outstanding -= 1
            if state.outstanding <= 0:
                state.wake_all()
        state.point_done(point.spec, record)
    with state.lock:
        device.busy -= 1
        state.wake(device)
    write_schedule(state)


def _existing(state: SweepState, point: Point) -> RunRecord | None:
    record = getattr(state.journal, "record", None)
    return record(point.spec) if callable(record) else None
