"""Clock offsets of the devices, by Cristian's algorithm, recorded before a concurrent sweep.

Cross-device timing compared after the fact is only as good as the worst clock in the set.
The agent's `clock` verb reports when it started and when it finished, so its own runtime
cancels:

    offset      = midpoint(agent started, agent finished) - midpoint(local send, local receive)
    uncertainty = (round trip - agent runtime) / 2          (the transport time not accounted for)

An offset inside its own uncertainty is reported as agreeing rather than as slightly wrong.
Several readings are taken and the one with the shortest round trip is kept (the usual
refinement of Cristian's method): the first call on a fresh connection pays for pushing or
checking the agent, which is transport time on one leg only and skews a single reading.
Using only the finishing stamp (an earlier design) biases the offset by half the agent's
runtime; `estimate` never does that, and a test holds it to it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from benchlab.devices.base import Transport
from benchlab.errors import DeviceError

SAMPLES = 3


@dataclass(frozen=True)
class ClockReading:
    """One device's clock against ours, in seconds (positive: the device is ahead)."""

    offset_s: float
    uncertainty_s: float
    round_trip_s: float
    agent_runtime_s: float

    @property
    def agreeing(self) -> bool:
        return abs(self.offset_s) <= self.uncertainty_s

    def as_json(self) -> dict[str, Any]:
        data = {key: round(value, 6) for key, value in asdict(self).items()}
        data["agreeing"] = self.agreeing
        return data


def estimate(sent: float, received: float, started: float, finished: float) -> ClockReading:
    """Cristian's estimate from our send/receive stamps and the agent's start/finish stamps."""
    if received < sent:
        raise ValueError(f"received {received} before sent {sent}")
    if finished < started:
        raise ValueError(f"agent finished {finished} before it started {started}")
    round_trip = received - sent
    runtime = finished - started
    # Differences of nearby stamps first: they are exact in floating point, so an agent
    # stamped between our send and receive is always agreeing. Halving sums of epoch
    # seconds (1.7e9, 0.24 us apart) could land one rounding step outside.
    offset = ((started - sent) + (finished - received)) / 2
    # A runtime longer than the round trip means one of the clocks jumped; no negative widths.
    uncertainty = max(round_trip - runtime, 0.0) / 2
    return ClockReading(
        offset_s=offset, uncertainty_s=uncertainty, round_trip_s=round_trip, agent_runtime_s=runtime
    )


def measure(
    transport: Transport,
    *,
    timeout: float,
    wall: Callable[[], float] = time.time,
    samples: int = SAMPLES,
) -> ClockReading:
    """The tightest of `samples` readings; DeviceError when the device cannot be asked or
    answers nonsense."""
    readings = [_read_once(transport, timeout, wall) for _ in range(max(samples, 1))]
    return min(readings, key=lambda reading: reading.round_trip_s)


def _read_once(transport: Transport, timeout: float, wall: Callable[[], float]) -> ClockReading:
    sent = wall()
    answer = transport.call("clock", None, timeout=timeout)
    received = wall()
    try:
        started = float(answer["started_at"])
        finished = float(answer["finished_at"])
    except (TypeError, KeyError, ValueError) as exc:
        raise DeviceError(
            f"{transport.device_id}: clock answer lacks started_at/finished_at: {answer!r}",
            transport.device_id,
        ) from exc
    try:
        return estimate(sent, received, started, finished)
    except ValueError as exc:
        raise DeviceError(f"{transport.device_id}: clock: {exc}", transport.device_id) from exc
