"""The order in which a device's workers take its pending points.

- `spec` (default): the expansion order, as the sequential runner does.
- `interleave`: rotate across configurations, so no configuration runs its whole share in one
  stretch of the machine's thermal history. A configuration is (backend, model, precision,
  mode); the first point of each configuration comes first, then the second of each, ...
- `shuffle`: a seeded permutation per device (seed = policies.order_seed and the device id),
  so that configuration is not confounded with thermal drift and a rerun draws the same order.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TypeVar

from benchlab.errors import ConfigError
from benchlab.models import RunSpec

POLICIES = ("spec", "interleave", "shuffle")

T = TypeVar("T")


def configuration(spec: RunSpec) -> tuple[str, str, str, str]:
    return (spec.backend, spec.model, spec.precision, spec.mode)


def interleave(specs: Sequence[RunSpec]) -> list[RunSpec]:
    buckets: dict[tuple[str, str, str, str], list[RunSpec]] = {}
    for spec in specs:
        buckets.setdefault(configuration(spec), []).append(spec)
    rows = list(buckets.values())  # first-seen order of configurations
    out: list[RunSpec] = []
    for depth in range(max((len(row) for row in rows), default=0)):
        out.extend(row[depth] for row in rows if depth < len(row))
    return out


def shuffle(specs: Sequence[T], seed: int, device: str) -> list[T]:
    out = list(specs)
    random.Random(f"{seed}:{device}").shuffle(out)
    return out


def order_points(specs: Sequence[RunSpec], policy: str, *, seed: int, device: str) -> list[RunSpec]:
    """One device's points in the order its workers take them."""
    if policy == "spec":
        return list(specs)
    if policy == "interleave":
        return interleave(specs)
    if policy == "shuffle":
        return shuffle(specs, seed, device)
    raise ConfigError(
        f"policies.order: unknown order policy {policy!r}; expected one of {', '.join(POLICIES)}"
    )
