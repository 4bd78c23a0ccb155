"""The repeats inside runs as a floor for a short history's noise (ARCHITECTURE.md,
Regression detection): a 2 % difference between runs whose repeats spread 5 % is no step,
confirmed or suspect, however closely a few runs happen to agree; a 15 % step over runs
whose repeats spread 1 % still is; a history of `repeats.FEW_RUNS` runs or more is judged on
its own noise as before."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from tests.regress.test_regress import entries

from benchlab.detect.regress import detect
from benchlab.detect.repeats import FEW_RUNS, within_floor

METRIC = "peak_tok_per_sec"


def _history(values: list[float], sd: float, n: int = 5) -> list[dict[str, Any]]:
    """Runs with these values, each carrying `n` repeats of standard deviation `sd`."""
    out = entries(values)
    for entry, value in zip(out, values, strict=True):
        entry["metric_samples"] = {METRIC: {"n": n, "mean": value, "sd": sd}}
    return out


def _flat(n: int, seed: int, noise: float) -> list[float]:
    return list(100 * (1 + np.random.default_rng(seed).normal(0, noise, n)))


@pytest.mark.parametrize(
    ("runs", "first_bad", "status"),
    [(8, 4, "confirmed"), (8, 6, "suspect"), (10, 5, "confirmed")],
)
def test_a_small_difference_within_the_repeats_spread_is_no_step(
    runs: int, first_bad: int, status: str
) -> None:
    """A 2 % drop over runs that agree within 0.1 % (by chance) while each run's repeats
    spread 5 %: the runs' own noise alone calls it a step; the repeats say it is not."""
    values = _flat(runs, 3, 0.001)
    values[first_bad:] = [v * 0.98 for v in values[first_bad:]]
    without = detect(entries(values))  # no repeats: the runs' own noise alone
    assert [(s.status, s.first_bad_run) for s in without] == [(status, f"pi5-run-{first_bad:03d}")]
    assert detect(_history(values, sd=5.0)) == []


@pytest.mark.parametrize(("runs", "first_bad"), [(8, 4), (10, 5), (11, 3)])
def test_a_large_step_over_tight_repeats_is_still_a_step(runs: int, first_bad: int) -> None:
    values = _flat(runs, 5, 0.01)
    values[first_bad:] = [v * 0.85 for v in values[first_bad:]]
    [step] = detect(_history(values, sd=1.0))
    assert (step.status, step.kind, step.first_bad_run) == (
        "confirmed",
        "regression",
        f"pi5-run-{first_bad:03d}",
    )
    assert step.open and -0.17 < step.change < -0.13


def test_a_long_history_is_judged_on_its_own_noise() -> None:
    """`FEW_RUNS` runs or more: the runs' noise is trusted, the repeats are not a floor."""
    values = _flat(FEW_RUNS + 4, 3, 0.001)
    values[8:] = [v * 0.98 for v in values[8:]]
    with_repeats = detect(_history(values, sd=5.0))
    assert with_repeats == detect(entries(values))
    assert [(s.status, s.first_bad_run) for s in with_repeats] == [("confirmed", "pi5-run-008")]


def test_the_floor_is_the_pooled_standard_error_of_a_run() -> None:
    runs = [(entry, entry[METRIC]) for entry in _history([100.0, 101.0, 99.0], sd=3.0, n=4)]
    runs[1][0]["metric_samples"] = {METRIC: {"n": 10, "mean": 101.0, "sd": 6.0}}
    pooled = (3 * 9 / 4 + 3 * 9 / 4 + 9 * 36 / 10) / (3 + 3 + 9)
    assert within_floor(runs, METRIC) == pytest.approx(math.sqrt(pooled))
    assert within_floor(runs, "decode_tok_per_sec") == 0.0  # no repeats of that metric
    long = [(entry, entry[METRIC]) for entry in _history([100.0] * FEW_RUNS, sd=3.0)]
    assert within_floor(long, METRIC) == 0.0
