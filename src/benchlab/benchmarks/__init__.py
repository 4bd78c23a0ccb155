"""Benchmark backends: reference (numpy), llama-bench, command.

Each backend is an availability check (through the device's `exists`), a task the agent runs
on the device, and a parser that runs here on the controller.

Usage::

    backend = get_backend("reference")
    backend.check_available(device, spec)
    task = backend.build_task(spec, rid)
    answer = device.call("run", task.model_dump(), timeout=task.timeout_s + 60)
    envelope = AgentEnvelope.model_validate(answer)
    parsed = backend.parse(envelope, spec, rid)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchlab.errors import ConfigError

if TYPE_CHECKING:
    from benchlab.benchmarks.base import Backend

BACKENDS = ("command", "llama-bench", "reference")


def get_backend(name: str) -> Backend:
    """The backend called `name`; ConfigError for a name benchlab does not know."""
    if name == "reference":
        from benchlab.benchmarks.reference import ReferenceBackend

        return ReferenceBackend()
    if name == "llama-bench":
        from benchlab.benchmarks.llama_bench import LlamaBenchBackend

        return LlamaBenchBackend()
    if name == "command":
        from benchlab.benchmarks.command import CommandBackend

        return CommandBackend()
    raise ConfigError(f"backend {name!r}: unknown; expected one of {', '.join(BACKENDS)}")
