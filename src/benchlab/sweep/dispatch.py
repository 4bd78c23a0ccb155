"""Which point a device's worker takes next: budgets, injected points and overrun checks.

A mixin of the concurrent scheduler's `_Sweep` (split out of `scheduler.py` for size):
every method here runs on its state and, unless said, under its lock, so the choice of the
next point, the budget and the pending checks all see one consistent view.
"""

from __future__ import annotations

from benchlab.models import RunSpec
from benchlab.sweep.budget import MAX_ROUNDS
from benchlab.sweep.inject import refusal, run_command
from benchlab.sweep.worker_state import (
    MAX_WAIT_S,
    PENDING_CHECK_S,
    _Device,
    _Drain,
    _expected,
    _Job,
    _Point,
)


class _Dispatch:
    """Part of `_Sweep`; see the module docstring."""

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
