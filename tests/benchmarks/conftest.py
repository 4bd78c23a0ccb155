"""Helpers for backend tests: specs, envelopes and a real local device."""

from __future__ import annotations

from typing import Any

import pytest
from tests.kit.backend import envelope as kit_envelope

from benchlab.devices.local import LocalTransport
from benchlab.models import AgentEnvelope, DeviceConfig, RunSpec


def make_spec(backend: str, **fields: Any) -> RunSpec:
    base: dict[str, Any] = {
        "spec_id": f"here-{fields.get('model', 'tiny')}-f32-throughput-abcd1234",
        "experiment": "test",
        "device": "here",
        "machine_id": "here",
        "backend": backend,
        "model": "tiny",
        "precision": "f32",
        "mode": "throughput",
    }
    base.update(fields)
    return RunSpec(**base)


def envelope(stdout: str = "", *, exit_code: int | None = 0, **fields: Any) -> AgentEnvelope:
    """The kit's device answer, read as the runner reads it before a backend parses it."""
    return AgentEnvelope.model_validate(kit_envelope(stdout, exit_code, **fields))


@pytest.fixture
def spec_factory():
    return make_spec


@pytest.fixture
def envelope_factory():
    return envelope


@pytest.fixture
def device() -> LocalTransport:
    return LocalTransport("here", DeviceConfig())


def derived(parsed: Any, spec: RunSpec) -> dict[str, float]:
    """The metrics the runner stores for a parsed run (benchlab.metrics, the one derivation)."""
    from benchlab.metrics import derive

    return derive(
        parsed.kernel, parsed.batch, prompt_tokens=spec.prompt_tokens, extra=parsed.metrics
    )[0]
