"""Cristian's algorithm: the agent's runtime cancels, the rest is uncertainty."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchlab.devices.base import Transport
from benchlab.errors import DeviceError
from benchlab.sweep.clocks import estimate, measure


def test_same_clock_slow_agent_agrees() -> None:
    # Sent at 100, the agent (sharing our clock) starts at 100.1, spends 2 s collecting
    # sysinfo, finishes at 102.1, and the answer arrives at 102.2.
    reading = estimate(sent=100.0, received=102.2, started=100.1, finished=102.1)
    assert reading.offset_s == pytest.approx(0.0)
    assert reading.uncertainty_s == pytest.approx(0.1)
    assert reading.agreeing


def test_finish_stamp_bias_does_not_happen() -> None:
    # The old bug: offset from the finish stamp alone = 102.1 - 101.1 = 1.0 s of nonsense.
    reading = estimate(sent=100.0, received=102.2, started=100.1, finished=102.1)
    finish_only = 102.1 - (100.0 + 102.2) / 2
    assert finish_only == pytest.approx(1.0)
    assert abs(reading.offset_s) < 1e-9


def test_device_ahead_by_five_seconds() -> None:
    reading = estimate(sent=10.0, received=10.4, started=15.1, finished=15.3)
    assert reading.offset_s == pytest.approx(5.0)
    assert reading.round_trip_s == pytest.approx(0.4)
    assert reading.agent_runtime_s == pytest.approx(0.2)
    assert reading.uncertainty_s == pytest.approx(0.1)
    assert not reading.agreeing
    assert reading.as_json()["agreeing"] is False


def test_device_behind() -> None:
    reading = estimate(sent=10.0, received=11.0, started=7.0, finished=7.0)
    assert reading.offset_s == pytest.approx(-3.5)
    assert reading.uncertainty_s == pytest.approx(0.5)


def test_small_offset_inside_uncertainty_agrees() -> None:
    reading = estimate(sent=0.0, received=1.0, started=0.6, finished=0.6)
    assert reading.offset_s == pytest.approx(0.1)
    assert reading.uncertainty_s == pytest.approx(0.5)
    assert reading.agreeing


@given(
    st.floats(1.6e9, 1.9e9),
    st.lists(st.integers(0, 3), min_size=3, max_size=3),
)
def test_an_agent_stamped_inside_our_round_trip_agrees(sent: float, steps: list[int]) -> None:
    # Epoch stamps a few float steps apart (a fast fake device, a coarse clock): the agent
    # shares our clock, so it must agree; halving sums of epoch seconds once failed this
    # by one rounding step and flaked the scheduler test under load.
    stamps = [sent]
    for step in steps:
        stamp = stamps[-1]
        for _ in range(step):
            stamp = math.nextafter(stamp, math.inf)
        stamps.append(stamp)
    _, started, finished, received = stamps
    assert estimate(sent, received, started, finished).agreeing


def test_nonsense_stamps_refused() -> None:
    with pytest.raises(ValueError):
        estimate(sent=2.0, received=1.0, started=0.0, finished=0.0)
    with pytest.raises(ValueError):
        estimate(sent=0.0, received=1.0, started=3.0, finished=2.0)


class Answering(Transport):
    def __init__(self, answer: object) -> None:
        super().__init__("dev")
        self.answer = answer

    def call(self, verb, payload=None, *, timeout):  # type: ignore[no-untyped-def]
        assert verb == "clock"
        return self.answer


def test_measure_uses_both_stamps() -> None:
    stamps = iter([100.0, 100.4])
    reading = measure(
        Answering({"started_at": 105.1, "finished_at": 105.3}),
        timeout=5,
        wall=lambda: next(stamps),
        samples=1,
    )
    assert reading.offset_s == pytest.approx(5.0)


def test_measure_keeps_the_tightest_reading() -> None:
    """A slow first call (a cold connection) must not decide the offset."""
    stamps = iter([100.0, 101.0, 200.0, 200.2, 300.0, 300.6])
    reading = measure(
        Answering({"started_at": 205.0, "finished_at": 205.2}),
        timeout=5,
        wall=lambda: next(stamps),
        samples=3,
    )
    assert reading.round_trip_s == pytest.approx(0.2)
    assert reading.offset_s == pytest.approx(5.0)


def test_measure_refuses_a_bad_answer() -> None:
    with pytest.raises(DeviceError, match="started_at"):
        measure(Answering({"finished_at": 1.0}), timeout=5)
