"""Fixtures of the site tests: a small public store built from the models."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # pytest runs in importlib mode

from site_factory import write_store


@pytest.fixture
def public_store(store: Path):
    write_store(store)
    return store
