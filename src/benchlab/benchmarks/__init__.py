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

import importlib
from typing import TYPE_CHECKING

from benchlab.errors import ConfigError
from benchlab.runtime.plugins import load_plugin, plugin_names

if TYPE_CHECKING:
    from benchlab.benchmarks.base import Backend

ENTRY_POINT_GROUP = "benchlab.backends"
"""The entry point group a package registers its own backends in (`name = module:Class`), as
order plug-ins register in `benchlab.order_policies`."""

BUILT_IN: dict[str, str] = {
    "command": "benchlab.benchmarks.command:CommandBackend",
    "llama-bench": "benchlab.benchmarks.llama_bench:LlamaBenchBackend",
    "reference": "benchlab.benchmarks.reference:ReferenceBackend",
}
"""The backends benchlab ships, by name: where each one's class is, imported only when a
sweep names it (each pulls in its own parser and dependencies)."""

BACKENDS = tuple(BUILT_IN)


def known_backends() -> tuple[str, ...]:
    """Every backend name a sweep may use: the built-in ones and those installed packages
    register in ENTRY_POINT_GROUP, sorted."""
    return tuple(sorted(set(BUILT_IN) | plugin_names(ENTRY_POINT_GROUP)))


def get_backend(name: str) -> Backend:
    """The backend called `name`; a one-line ConfigError listing the known ones otherwise."""
    factory: object = None
    where = BUILT_IN.get(name)
    if where is not None:
        module, _, attribute = where.partition(":")
        factory = getattr(importlib.import_module(module), attribute)
    else:
        factory = load_plugin(ENTRY_POINT_GROUP, name)
    if not callable(factory):
        raise ConfigError(
            f"backend {name!r}: unknown; expected one of {', '.join(known_backends())}"
        )
    backend: Backend = factory()
    return backend
