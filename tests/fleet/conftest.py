"""The fleet fixture: real sshd hosts in network namespaces (fleet_hosts.py), once a session.

`fleet` hands the session's fleet to one test and heals it afterwards (links up, sshd
running), so a test that cuts a host cannot leak the fault into the next one.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# pytest runs with --import-mode=importlib, which leaves test dirs off sys.path; the
# fleet's helper module lives next to this file and the test modules import it by name.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fleet_hosts import Fleet, FleetUnavailable

FLEET_SIZE = 4
LOOPBACK_ENV = "BENCHLAB_FLEET_LOOPBACK"
"""Set to 1 to build the loopback fleet even where namespaces work (checks the fallback)."""


@pytest.fixture(scope="session")
def fleet_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    fleet = Fleet(FLEET_SIZE, force_loopback=os.environ.get(LOOPBACK_ENV) == "1")
    try:
        try:
            fleet.start()
        except FleetUnavailable as exc:
            pytest.skip(f"no test fleet here: {exc}")
        yield fleet
    finally:
        fleet.close()


@pytest.fixture
def fleet(fleet_session: Fleet) -> Iterator[Fleet]:
    try:
        yield fleet_session
    finally:
        fleet_session.heal()


@pytest.fixture
def needs_cut(fleet: Fleet) -> Fleet:
    """For tests that cut links: skipped, with the reason, on a loopback-only fleet."""
    if not fleet.can_cut:
        pytest.skip(f"needs a link cut, which a loopback fleet cannot do: {fleet.skip_reason}")
    return fleet
