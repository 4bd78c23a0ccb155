"""Catalog test fixtures: the synthetic fleet generator (the kit's loader of make_fleet.py).

`bench` (a CLI runner) comes from tests/conftest.py.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from tests.kit.fleet import load_make_fleet


@pytest.fixture
def make_fleet() -> Callable[..., list[str]]:
    """`make_fleet(store, runs, seed, ...)`: write that many realistic run dirs into a store."""
    return load_make_fleet().make_fleet
