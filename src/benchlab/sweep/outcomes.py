"""What happens once a point ends: history, retries, breaker events and draining a device.

A mixin of the concurrent scheduler's `_Sweep` (split out of `scheduler.py` for size):
the methods run on its state, so a finished point's record, its retry and the device's
breaker are settled in one place.
"""

from __future__ import annotations

from benchlab.models import RunRecord, RunSpec
from benchlab.sweep.history import (
    point_key,
)
from benchlab.sweep.worker_state import (
    _Device,
    _Job,
    _Point,
    utc_iso_at,
)


class _Outcomes:
    """Part of `_Sweep`; see the module docstring."""

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
