"""The transport seam: everything the controller needs from a device, and nothing more.

A transport runs one agent verb on its device and returns the agent's JSON answer. Every
failure to reach or keep the device raises `DeviceError` (the only class the scheduler
retries); a benchmark's own non-zero exit is *not* a transport failure and comes back
inside the envelope.

Usage::

    with open_transport("pi5", device_config) as device:
        info = device.call("sysinfo", timeout=30)
        envelope = device.call("run", task.model_dump(), timeout=task.timeout_s + 30)
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from types import TracebackType
from typing import Any


class Transport(ABC):
    """One connection to one device, reused across points by one worker."""

    def __init__(self, device_id: str) -> None:
        self.device_id = device_id

    @abstractmethod
    def call(self, verb: str, payload: dict[str, Any] | None = None, *, timeout: float) -> Any:
        """Run `agent <verb>` with `payload` as JSON on stdin; return its parsed JSON answer.

        Raises DeviceError when the device cannot be reached, the agent never answered,
        or its answer is not JSON.
        """

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release the connection; safe to call twice."""

    def __enter__(self) -> Transport:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
