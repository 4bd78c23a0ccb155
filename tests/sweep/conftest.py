"""Fixtures of the sweep tests; the fakes live in sweep_fakes.py (importable by the tests)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from sweep_fakes import FakeBackend

from benchlab.layout import Store
from benchlab.models import GitInfo


@pytest.fixture
def fake_backend() -> FakeBackend:
    return FakeBackend()


@pytest.fixture
def sweep_store(store: Path) -> Store:
    return Store(store)


@pytest.fixture
def no_git() -> GitInfo:
    return GitInfo(rev="abc1234", branch="main", dirty=False)
