"""A transport that answers from a script: the device side of the attempt logic's tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.kit.backend import envelope, ok_stdout

from benchlab.devices.base import Transport


class FakeTransport(Transport):
    """Answers `call` from a script: each item is an answer dict or an exception to raise.

    When the script runs out, every further call answers `default` (an ok run). `calls`
    keeps (verb, payload, timeout) of each call; `on_call` runs first, for tests that act
    mid-sweep (kill, stop, change a file).
    """

    def __init__(self, device_id: str = "laptop", script: list[Any] | None = None) -> None:
        super().__init__(device_id)
        self.script = list(script or [])
        self.default: Any = envelope(ok_stdout())
        self.calls: list[tuple[str, Any, float]] = []
        self.closed = 0
        self.on_call: Callable[[str, Any], None] | None = None

    def call(self, verb: str, payload: dict[str, Any] | None = None, *, timeout: float) -> Any:
        self.calls.append((verb, payload, timeout))
        if self.on_call is not None:
            self.on_call(verb, payload)
        item = self.script.pop(0) if self.script else self.default
        if isinstance(item, BaseException):
            raise item
        return item

    def close(self) -> None:
        self.closed += 1
