"""A write set killed part way (ARCHITECTURE.md, invariant 8): a real `bench catalog build`
process held by the tests-only pause after its first replaced file, then killed with
SIGKILL. Its journal puts every file back on the next open, so `validate` never calls mixed
shards valid and the next build publishes everything."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from tests.catalog.test_faults import tracked

from benchlab.catalog.build import build
from benchlab.catalog.read import load_catalog
from benchlab.layout import JOURNAL, PAUSE_ENV, Store

Bench = Callable[..., tuple[int, str, str]]
SRC = Path(__file__).resolve().parents[2] / "src"


def test_a_build_killed_mid_write_set_is_rolled_back_on_the_next_open(
    store: Path, make_fleet: Callable[..., list[str]], bench: Bench
) -> None:
    make_fleet(store, 12, seed=9)
    build(Store(store))
    before = tracked(store)
    added = make_fleet(store, 4, seed=9, first=20, step_s=1296000)  # new shards, new weeks
    aside = Store(store).write_aside
    env = {**os.environ, PAUSE_ENV: "1", "PYTHONPATH": str(SRC)}
    child = subprocess.Popen(
        [sys.executable, "-m", "benchlab", "--store", str(store), "catalog", "build"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while not (aside / "paused").exists():
            assert child.poll() is None, "the build ended before its pause"
            assert time.monotonic() < deadline, "no pause within 120 s"
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait(timeout=30)
    assert (aside / JOURNAL).exists()
    assert tracked(store) != before  # mixed: one file of the set is new, the rest old
    code, _, err = bench("--store", str(store), "catalog", "validate")
    assert code == 0, err
    assert "put back (a write set was killed part way)" in err
    assert tracked(store) == before
    assert not (aside / JOURNAL).exists()
    assert build(Store(store)).new == len(added)
    ids = {e["run_id"] for e in load_catalog(store / "catalog.json").runs}
    assert set(added) <= ids
