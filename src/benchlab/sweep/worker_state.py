"""The per-device worker state of a concurrent sweep, and the scheduler's timings.

Shared by `scheduler.py` and the mixins split from it (dispatch, outcomes, recovery,
schedule_view), so none of them has to import the scheduler itself.
"""

from __future__ import annotations

import statistics
import threading
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

from benchlab.devices.base import Transport
from benchlab.errors import DeviceError
from benchlab.ids import utc_iso
from benchlab.models import DeviceConfig, RunSpec
from benchlab.sweep.breaker import Breaker
from benchlab.sweep.groups import Group
from benchlab.sweep.history import (
    point_key,
)

STOP_POLL_S = 0.25
"""How often the stop request file is looked at: at least every second, so `bench stop`
takes effect within one."""
MAX_WAIT_S = 1.0
"""No worker sleeps longer than this without looking at the state again."""
CLOCK_GRACE_S = 30.0
PENDING_CHECK_S = 5.0
"""How often points on the devices are looked at for overrunning their expected duration."""


@dataclass
class _Point:
    spec: RunSpec
    run_id: str
    attempt: int = 1
    failures: int = 0
    last_error: str = ""
    started_at: float | None = None
    """When a worker took it off the queue (the scheduler's clock): time on the device."""
    overran: bool = False


@dataclass
class _Job:
    point: _Point
    probe: bool


@dataclass
class _Drain:
    points: list[_Point]


@dataclass
class _Device:
    id: str
    config: DeviceConfig
    breaker: Breaker
    cond: threading.Condition
    group: Group | None = None
    queue: deque[_Point] = field(default_factory=deque)
    busy: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    trips: list[dict[str, Any]] = field(default_factory=list)
    round: int = 0
    has_rounds: bool = False
    workers: int = 0
    """Workers still taking points: an injected point goes only where one is left."""
    running: dict[str, _Point] = field(default_factory=dict)
    """The points on the device now, by run id."""
    expected: dict[str, float] = field(default_factory=dict)
    """Expected seconds per point (history.point_key), from this device's own history."""

    @property
    def machine(self) -> str:
        return self.config.machine_id or self.id


def _expected(device: _Device, spec: RunSpec) -> float:
    """Seconds `spec` is expected to take on `device`: its own past durations there, else
    the median over the device's other points (a new point on a slow device is slow too),
    else 0 (nothing known: the slack alone is the bound)."""
    known = device.expected.get(point_key(spec))
    if known is not None:
        return known
    return statistics.median(device.expected.values()) if device.expected else 0.0


def _worker_id(device: str, index: int) -> str:
    from benchlab.sweep.placeholders import worker_instance_id

    return worker_instance_id(device, index)


def _default_transport(device_id: str, config: DeviceConfig) -> Transport:
    from benchlab.devices import open_transport

    return open_transport(device_id, config)


def _close_quietly(transport: Transport) -> None:
    try:
        transport.close()
    except Exception:  # closing a broken connection must not hide the point's own outcome
        pass


class _Unreachable(Transport):
    """Stands in for a transport that could not even be opened, so the attempt records it."""

    def __init__(self, device_id: str, error: DeviceError) -> None:
        super().__init__(device_id)
        self.error = error

    def call(self, verb: str, payload: dict[str, Any] | None = None, *, timeout: float) -> Any:
        raise self.error


def utc_iso_at(stamp: float) -> str:
    from datetime import datetime, timezone

    return utc_iso(datetime.fromtimestamp(stamp, tz=timezone.utc))
