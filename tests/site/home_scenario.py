"""A generated fleet for the home page's questions: a -28 % step that began 66
days before the newest run and is still in effect, a regression that was fixed, a step too
recent to confirm (a suspect), a memory figure going up (lower is better), a flat series whose
newest run is a marked outlier, and a machine whose clock stamped one run in 2099."""

from __future__ import annotations

import random
from datetime import datetime, timezone

from site_factory import START, entry

from benchlab.models import CatalogEntry

DAYS = 90
"""Runs every other day, days 0 to 88: the newest honest run is day 88."""
OLD_STEP_DAY = 22
"""oldbox loses 28 % from here on: 66 days before the newest run, far outside the window."""
FUTURE = datetime(2099, 1, 1, 12, 0, tzinfo=timezone.utc)


def _series(machine: str, rate_of, seed: int, **extra) -> list[CatalogEntry]:
    rng = random.Random(seed)
    out = []
    for day in range(0, DAYS, 2):
        rate, more = rate_of(day)
        run = entry(machine, "SmolLM2-135M", "q8", day, rate * rng.uniform(0.97, 1.03),
                    **{**extra, **more})  # fmt: skip
        out.append(run)
    return out


def scenario_runs(future: bool = True) -> list[CatalogEntry]:
    runs: list[CatalogEntry] = []
    # Still in effect, 66 days old; a marked outlier (far too slow) before it, drawn hollow.
    runs += _series(
        "oldbox",
        lambda d: (
            (40.0 * (0.72 if d >= OLD_STEP_DAY else 1.0)) * (0.4 if d == 10 else 1.0),
            {"tags": ["batch", "outlier"]} if d == 10 else {},
        ),
        1,
    )
    # Fixed: -20 % from day 30, back from day 60.
    runs += _series("fixbox", lambda d: (20.0 * (0.8 if 30 <= d < 60 else 1.0), {}), 2)
    # Too recent to confirm: the two newest runs 35 % down.
    runs += _series("tailbox", lambda d: (30.0 * (0.65 if d >= DAYS - 4 else 1.0), {}), 3)
    # Throughput flat, peak memory 30 % up from day 40: lower is better, so a regression.
    runs += _series(
        "membox", lambda d: (25.0, {"peak_rss_mb": 1000.0 * (1.3 if d >= 40 else 1.0)}), 4
    )
    # Flat, its newest run a marked outlier at a third of the rate: no step, no suspect.
    runs += _series(
        "markbox",
        lambda d: (
            15.0 * (0.3 if d == DAYS - 2 else 1.0),
            {"tags": ["batch", "outlier"]} if d == DAYS - 2 else {},
        ),
        5,
    )
    runs += _series("clockbox", lambda d: (10.0, {}), 6)
    if future:  # the same machine, its clock 74 years ahead, on another model
        day = (FUTURE - START).days
        runs.append(entry("clockbox", "Llama-3.2-1B", "q8", day, 3.0))
    return runs
