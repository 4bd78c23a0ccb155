"""The scheduler tests' config: experiment `exp`, a model x threads matrix per device.

The doubles (backend, runner, devices, progress sink) are the kit's (tests.kit.scheduler);
only this matrix shape is the scheduler tests' own: its size (devices x models x threads) is
what their counts of points, workers and probes are written against.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tests.kit.configs import NO_BACKOFF, parse_sweep

from benchlab.models import SweepConfig


def make_config(
    devices: dict[str, dict[str, Any]],
    *,
    models: Iterable[str] = ("a", "b", "c"),
    threads: Iterable[int] = (1, 2),
    policies: dict[str, Any] | None = None,
    resource_groups: dict[str, Any] | None = None,
    matrix_devices: list[str] | None = None,
) -> SweepConfig:
    """Every device in `devices` (or `matrix_devices`) x `models` x `threads`, reference
    backend at f32; retries without backoff unless `policies` says otherwise."""
    sections: dict[str, Any] = {"resource_groups": resource_groups} if resource_groups else {}
    return parse_sweep(
        experiment="exp",
        devices=devices,
        policies=policies or NO_BACKOFF,
        matrix={
            "device": matrix_devices or list(devices),
            "model": list(models),
            "threads": list(threads),
        },
        **sections,
    )
