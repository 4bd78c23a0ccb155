"""The backend seam: an availability check, a task to run on the device, and a parser.

The parser runs on the controller, never on the device, so the device side stays stdlib-only
and raw output is always kept even when parsing breaks.
"""

from __future__ import annotations

import signal
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from benchlab.devices.base import Transport
from benchlab.models import AgentEnvelope, AgentTask, BatchResults, KernelResults, RunSpec


@dataclass
class ParsedRun:
    """What a parser extracts from one envelope: kernel.json and batch.json, the backend's
    own extra metrics, and `facts`: identity fields the run itself reported (threads, batch,
    build number ...), which win over what the spec asked (see `benchlab.identity.derive`).
    The headline metrics are not the parser's job: `benchlab.metrics.derive` makes them."""

    kernel: KernelResults
    batch: BatchResults
    metrics: dict[str, float | None] = field(default_factory=dict)
    extra_files: dict[str, Any] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)


class Backend(ABC):
    name: str

    @abstractmethod
    def check_available(self, device: Transport, spec: RunSpec) -> None:
        """Raise ConfigError when the device lacks what the backend needs.

        Raise DeviceError (never return quietly) when the device cannot be asked.
        """

    @abstractmethod
    def build_task(self, spec: RunSpec, run_id: str) -> AgentTask:
        """The command the agent runs on the device for this point."""

    @abstractmethod
    def parse(self, envelope: AgentEnvelope, spec: RunSpec, run_id: str) -> ParsedRun:
        """Turn raw output into results; raise ParseError when it cannot."""

    def crash_hint(
        self, spec: RunSpec, sig: signal.Signals, cpu_flags: frozenset[str] | None
    ) -> str | None:
        """The likely cause of the benchmark crashing with `sig`, and what to try, where the
        backend knows one. `cpu_flags` are the device's CPU flags when the device is this
        machine, else None (not known)."""
        return None
