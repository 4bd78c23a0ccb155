"""FakeDevice: an in-memory device with scripted failures, for the scheduler's tests and perf.

Like httpx's MockTransport it is a real `Transport`: the scheduler cannot tell it from a
remote machine. What it does is held in a `FakeBehaviour` shared by every transport opened
to the same device (workers reopen transports after a failure, the script must survive
that), and machines shared by several device ids (a resource group) share one
`FakeMachine`, which records how many runs overlapped on it.

    behaviour = FakeBehaviour(duration_s=0.01)
    behaviour.fail_next = 2          # the next two calls raise DeviceError
    device = FakeDevice("pi5", behaviour)
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from benchlab.devices.base import Transport
from benchlab.errors import DeviceError


@dataclass
class FakeMachine:
    """One physical machine: counts overlapping `run` calls across its device ids."""

    running: int = 0
    max_running: int = 0
    order: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def enter(self, device: str) -> None:
        with self._lock:
            self.running += 1
            self.max_running = max(self.max_running, self.running)
            self.order.append(device)

    def leave(self) -> None:
        with self._lock:
            self.running -= 1


@dataclass
class FakeBehaviour:
    """What a fake device does. Mutable while a sweep runs (tests flip `down`)."""

    duration_s: float | Callable[[dict[str, Any]], float] = 0.0
    fail_next: int = 0
    down: bool = False
    error: str = "connection refused"
    exit_code: int = 0
    clock_offset_s: float = 0.0
    agent_runtime_s: float = 0.0
    machine: FakeMachine | None = None
    fail_when: Callable[[str, dict[str, Any] | None], str | None] | None = None
    calls: list[tuple[str, float]] = field(default_factory=list)
    runs: int = 0
    running: int = 0
    max_running: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _failure(self, verb: str, payload: dict[str, Any] | None) -> str | None:
        with self._lock:
            self.calls.append((verb, time.monotonic()))
            if self.down:
                return self.error
            if self.fail_next > 0:
                self.fail_next -= 1
                return self.error
        if self.fail_when is not None:
            return self.fail_when(verb, payload)
        return None


class FakeDevice(Transport):
    """Answers `clock`, `sysinfo`, `exists` and `run` from a FakeBehaviour."""

    def __init__(
        self,
        device_id: str,
        behaviour: FakeBehaviour | None = None,
        *,
        sleep: Callable[[float], None] = time.sleep,
        wall: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(device_id)
        self.behaviour = behaviour or FakeBehaviour()
        self._sleep = sleep
        self._wall = wall
        self.closed = False

    def call(self, verb: str, payload: dict[str, Any] | None = None, *, timeout: float) -> Any:
        if self.closed:
            raise DeviceError(f"device {self.device_id!r}: transport used after close")
        behaviour = self.behaviour
        failure = behaviour._failure(verb, payload)
        if failure is not None:
            raise DeviceError(f"device {self.device_id!r}: {failure}", self.device_id)
        if verb == "clock":
            started = self._wall() + behaviour.clock_offset_s
            if behaviour.agent_runtime_s:
                self._sleep(behaviour.agent_runtime_s)
            return {"started_at": started, "finished_at": started + behaviour.agent_runtime_s}
        if verb == "sysinfo":
            return {"os": {"name": "fake"}, "cpu": {"model": "fake"}}
        if verb == "exists":
            return {"exists": True, "path": None}
        if verb != "run":
            raise DeviceError(f"device {self.device_id!r}: unknown verb {verb!r}", self.device_id)
        return self._run(payload or {})

    def _run(self, task: dict[str, Any]) -> dict[str, Any]:
        behaviour = self.behaviour
        duration = behaviour.duration_s
        seconds = duration(task) if callable(duration) else duration
        with behaviour._lock:
            behaviour.running += 1
            behaviour.runs += 1
            behaviour.max_running = max(behaviour.max_running, behaviour.running)
        if behaviour.machine is not None:
            behaviour.machine.enter(self.device_id)
        started = self._wall()
        try:
            if seconds > 0:
                self._sleep(seconds)
        finally:
            if behaviour.machine is not None:
                behaviour.machine.leave()
            with behaviour._lock:
                behaviour.running -= 1
        return {
            "started_at": started,
            "finished_at": self._wall(),
            "exit_code": behaviour.exit_code,
            "timed_out": False,
            "stdout": json.dumps({"device": self.device_id, "argv": task.get("argv", [])}),
            "stderr": "" if behaviour.exit_code == 0 else "fake failure",
            "telemetry": {},
        }

    def close(self) -> None:
        self.closed = True
