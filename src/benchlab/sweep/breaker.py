"""The per-device circuit breaker (ARCHITECTURE.md, The scheduler): a pure state machine.

    closed ──(failure_threshold consecutive transport failures)──> open
    open ──(recovery_after_s elapsed)──> half-open: exactly one probe
    half-open ──(probe succeeded)──> closed
              ──(probe failed)──> open, cooldown restarts (opened_at moves, down_since stays)
    open ──(drain_after_cooldowns full cooldowns, each ended by a failed probe)──> drained

Without it, one unreachable machine costs the sweep its whole retry budget on every point
left on that machine; with it the device is taken out of service and given a chance to come
back. `down_since` is kept apart from `opened_at` because `opened_at` restarts on every
failed probe, so "down too long" measured from it would never fire.

Reading of "drain after N full cooldowns with no success": a cooldown is full when it ran to
its end and the probe that ended it failed. The device drains when N such cooldowns have
passed AND it has been down (since `down_since`) for at least N × recovery_after_s. With the
default N = 2: trip, cooldown, probe fails, cooldown, probe fails, drain.

The clock is injected (monotonic seconds) so every transition is unit-tested without
sleeping. The breaker itself is not thread-safe; the scheduler calls it under its lock.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from benchlab.models import BreakerPolicy

State = Literal["closed", "open", "half-open", "drained"]
Decision = Literal["go", "probe", "wait", "drain"]
Event = Literal["opened", "reopened", "closed", "drained"]


@dataclass
class Trip:
    """One opening of the breaker (monotonic seconds; the scheduler adds wall times)."""

    opened_at: float
    failures: int
    error: str
    closed_at: float | None = None
    probes_failed: int = 0


@dataclass
class Breaker:
    """One device's breaker. Call `decide()` before an attempt and `record_*` after it."""

    policy: BreakerPolicy
    clock: Callable[[], float] = time.monotonic
    state: State = "closed"
    consecutive_failures: int = 0
    opened_at: float | None = None
    down_since: float | None = None
    cooldowns_failed: int = 0
    probe_in_flight: bool = False
    last_error: str = ""
    trips: list[Trip] = field(default_factory=list)

    def decide(self) -> Decision:
        """May an attempt start now? `probe` grants the single half-open probe.

        `wait` means: come back at `ready_at()`; `drain` means: never again this sweep.
        """
        if self.state == "closed":
            return "go"
        if self.state == "drained":
            return "drain"
        if self.state == "half-open":
            return "wait"  # the one probe is out; everyone else waits for its answer
        assert self.opened_at is not None
        if self.clock() - self.opened_at < self.policy.recovery_after_s:
            return "wait"
        self.state = "half-open"
        self.probe_in_flight = True
        return "probe"

    def can_start(self) -> bool:
        """Would `decide()` let an attempt (or the probe) start now? Changes nothing."""
        if self.state == "closed":
            return True
        if self.state == "open" and self.opened_at is not None:
            return self.clock() - self.opened_at >= self.policy.recovery_after_s
        return False

    def ready_at(self) -> float | None:
        """When an open breaker next lets a probe through (monotonic), else None."""
        if self.state == "open" and self.opened_at is not None:
            return self.opened_at + self.policy.recovery_after_s
        return None

    def record_success(self, *, probe: bool = False) -> Event | None:
        """The device answered (whatever the benchmark said). Closes an open breaker."""
        self.consecutive_failures = 0
        if probe:
            self.probe_in_flight = False
        if self.state in ("open", "half-open"):
            # A late answer from an attempt started before the trip also proves the device
            # is back; holding it out of service after that would only cost time.
            self.state = "closed"
            self.opened_at = None
            self.down_since = None
            self.cooldowns_failed = 0
            self.probe_in_flight = False
            if self.trips:
                self.trips[-1].closed_at = self.clock()
            return "closed"
        return None

    def record_failure(self, error: str, *, probe: bool = False) -> Event | None:
        """A transport failure. Returns the transition it caused, if any."""
        self.last_error = error
        now = self.clock()
        if self.state == "closed":
            self.consecutive_failures += 1
            if self.consecutive_failures < self.policy.failure_threshold:
                return None
            self.state = "open"
            self.opened_at = now
            self.down_since = now
            self.cooldowns_failed = 0
            self.trips.append(Trip(opened_at=now, failures=self.consecutive_failures, error=error))
            return "opened"
        if not probe:
            # An attempt started before the trip failed late: nothing new to learn.
            return None
        self.probe_in_flight = False
        self.cooldowns_failed += 1
        if self.trips:
            self.trips[-1].probes_failed += 1
        assert self.down_since is not None
        down_for = now - self.down_since
        needed = self.policy.drain_after_cooldowns
        if self.cooldowns_failed >= needed and down_for >= needed * self.policy.recovery_after_s:
            self.state = "drained"
            return "drained"
        self.state = "open"
        self.opened_at = now
        return "reopened"
