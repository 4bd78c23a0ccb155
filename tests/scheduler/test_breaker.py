"""The breaker through every transition, on an injected clock."""

from __future__ import annotations

from benchlab.models import BreakerPolicy
from benchlab.sweep.breaker import Breaker


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make(threshold: int = 3, recovery: float = 60.0, drain: int = 2) -> tuple[Breaker, Clock]:
    clock = Clock()
    policy = BreakerPolicy(
        failure_threshold=threshold, recovery_after_s=recovery, drain_after_cooldowns=drain
    )
    return Breaker(policy, clock), clock


def trip(breaker: Breaker, n: int = 3) -> None:
    for i in range(n):
        breaker.record_failure(f"boom {i}")


def test_closed_counts_consecutive_failures_and_success_resets() -> None:
    breaker, _ = make()
    assert breaker.decide() == "go"
    assert breaker.record_failure("a") is None
    assert breaker.record_failure("b") is None
    assert breaker.record_success() is None
    assert breaker.consecutive_failures == 0
    assert breaker.record_failure("c") is None
    assert breaker.state == "closed"


def test_threshold_opens_and_sets_down_since_and_opened_at() -> None:
    breaker, clock = make()
    breaker.record_failure("a")
    breaker.record_failure("b")
    assert breaker.record_failure("ssh dropped") == "opened"
    assert breaker.state == "open"
    assert breaker.opened_at == clock.now == breaker.down_since
    assert breaker.last_error == "ssh dropped"
    assert [t.failures for t in breaker.trips] == [3]


def test_open_waits_for_the_cooldown_then_grants_exactly_one_probe() -> None:
    breaker, clock = make()
    trip(breaker)
    assert breaker.decide() == "wait"
    assert not breaker.can_start()
    assert breaker.ready_at() == clock.now + 60
    clock.now += 59.9
    assert breaker.decide() == "wait"
    clock.now += 0.1
    assert breaker.can_start()
    assert breaker.decide() == "probe"
    assert breaker.state == "half-open"
    # Every other worker waits for the probe's answer, however long it takes.
    assert breaker.decide() == "wait"
    clock.now += 1000
    assert breaker.decide() == "wait"
    assert not breaker.can_start()


def test_probe_success_closes() -> None:
    breaker, clock = make()
    trip(breaker)
    clock.now += 60
    assert breaker.decide() == "probe"
    clock.now += 5
    assert breaker.record_success(probe=True) == "closed"
    assert breaker.state == "closed"
    assert breaker.down_since is None and breaker.opened_at is None
    assert breaker.trips[0].closed_at == clock.now
    assert breaker.decide() == "go"


def test_probe_failure_reopens_restarting_cooldown_but_not_down_since() -> None:
    breaker, clock = make(drain=3)
    trip(breaker)
    down_since = breaker.down_since
    clock.now += 60
    assert breaker.decide() == "probe"
    clock.now += 2
    assert breaker.record_failure("still down", probe=True) == "reopened"
    assert breaker.state == "open"
    assert breaker.opened_at == clock.now
    assert breaker.down_since == down_since
    clock.now += 59
    assert breaker.decide() == "wait"
    clock.now += 1
    assert breaker.decide() == "probe"


def test_drains_after_two_full_cooldowns_without_success() -> None:
    breaker, clock = make()
    trip(breaker)
    clock.now += 60
    assert breaker.decide() == "probe"
    assert breaker.record_failure("x", probe=True) == "reopened"
    clock.now += 60
    assert breaker.decide() == "probe"
    assert breaker.record_failure("x", probe=True) == "drained"
    assert breaker.state == "drained"
    assert breaker.decide() == "drain"
    assert breaker.trips[0].probes_failed == 2


def test_drain_is_measured_from_down_since_not_opened_at() -> None:
    # A zero-length cooldown: probes fail at once, yet the device is only drained when it
    # has been down for drain_after_cooldowns cooldowns counted from down_since.
    breaker, clock = make(recovery=10.0, drain=2)
    trip(breaker)
    clock.now += 10
    assert breaker.decide() == "probe"
    assert breaker.record_failure("x", probe=True) == "reopened"
    clock.now += 10
    assert breaker.decide() == "probe"
    assert breaker.record_failure("x", probe=True) == "drained"


def test_late_failure_of_an_attempt_started_before_the_trip_changes_nothing() -> None:
    breaker, clock = make()
    trip(breaker)
    opened = breaker.opened_at
    clock.now += 30
    assert breaker.record_failure("late") is None
    assert breaker.opened_at == opened and breaker.state == "open"


def test_late_success_while_open_closes() -> None:
    breaker, _ = make()
    trip(breaker)
    assert breaker.record_success() == "closed"
    assert breaker.decide() == "go"


def test_threshold_one_and_zero_recovery() -> None:
    breaker, _ = make(threshold=1, recovery=0.0, drain=1)
    assert breaker.record_failure("x") == "opened"
    assert breaker.decide() == "probe"
    assert breaker.record_failure("x", probe=True) == "drained"
