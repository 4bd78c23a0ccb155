"""Order policy plug-ins for the tests (named `tests.sweep.order_plugins:...`)."""

from __future__ import annotations

from collections.abc import Sequence

from benchlab.models import RunSpec


def reverse(specs: Sequence[RunSpec], *, seed: int, device: str) -> list[RunSpec]:
    """The expansion order backwards."""
    return list(reversed(specs))


def drop_one(specs: Sequence[RunSpec], *, seed: int, device: str) -> list[RunSpec]:
    """A broken policy: it loses a point."""
    return list(specs)[1:]
