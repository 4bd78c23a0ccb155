"""Noise that is not Gaussian (ARCHITECTURE.md, Regression detection): a one-run excursion
is an outlier, not a regression and its fix; bimodal noise is modelled, not averaged."""

from __future__ import annotations

import numpy as np
import pytest
from tests.regress.test_regress import entries

from benchlab.detect.noise import bimodal_gap, demode, mode_labels
from benchlab.detect.regress import detect


@pytest.mark.parametrize("at", [3, 6, 11])
def test_a_run_that_dips_and_comes_back_is_an_outlier_not_two_steps(at: int) -> None:
    """Thirteen builds, 1 % noise, one run 30 % down under background load (the one before
    the newest included: the newest came back)."""
    rng = np.random.default_rng(at)
    values = list(100 * (1 + rng.normal(0, 0.01, 13)))
    values[at] *= 0.7
    steps = detect(entries(values))
    assert [(s.status, s.kind, s.first_bad_run) for s in steps] == [
        ("outlier", "regression", f"pi5-run-{at:03d}")
    ]
    [outlier] = steps
    assert not outlier.open and -0.33 < outlier.change < -0.27 and outlier.confidence > 0.99


def test_a_step_after_an_outlier_is_still_found() -> None:
    rng = np.random.default_rng(2)
    values = list(100 * (1 + rng.normal(0, 0.01, 30)))
    values[5] *= 0.7
    values[15:] = [v * 0.85 for v in values[15:]]
    found = {(s.status, s.first_bad_run) for s in detect(entries(values))}
    assert found == {("outlier", "pi5-run-005"), ("confirmed", "pi5-run-015")}


def _bimodal(seed: int, n: int, gap: float, step_at: int | None) -> list[float]:
    rng = np.random.default_rng(seed)
    modes = rng.choice([0.0, gap], n)
    level = np.where(np.arange(n) >= (step_at if step_at is not None else n), 0.85, 1.0)
    return list(100 * level * (1 + modes) * (1 + rng.normal(0, 0.01, n)))


def test_a_15_percent_step_in_a_box_that_flips_between_two_clocks_is_found() -> None:
    """Two clock speeds 20 % apart, 1 % noise within each: averaged, the noise hides the
    step; with the modes taken out, it is 15 deviations wide."""
    found = 0
    for seed in range(10):
        values = _bimodal(seed, 30, 0.2, 15)
        steps = [s for s in detect(entries(values)) if s.status == "confirmed"]
        found += any(abs(int(s.first_bad_run[-3:]) - 15) <= 2 and s.kind == "regression"
                     and -0.2 < s.change < -0.1 for s in steps)  # fmt: skip
    assert found >= 7


def test_bimodal_noise_alone_is_no_step() -> None:
    for seed in range(10):
        values = _bimodal(100 + seed, 30, 0.2, None)
        assert bimodal_gap(values) is not None
        assert [s for s in detect(entries(values)) if s.status == "confirmed"] == []


def test_modes_are_labelled_and_taken_out() -> None:
    values = _bimodal(7, 40, 0.25, None)
    gap = bimodal_gap(values)
    assert gap is not None and abs(gap - np.log(1.25)) < 0.03
    truth = [int(v > 112) for v in values]
    assert mode_labels(values, gap) == truth
    flat, _ = demode(values)
    assert np.std(flat) / np.mean(flat) < 0.02


def test_gaussian_noise_is_not_bimodal() -> None:
    rng = np.random.default_rng(1)
    for n in (15, 30, 60):
        for _ in range(20):
            assert bimodal_gap(list(100 * (1 + rng.normal(0, 0.02, n)))) is None


def test_a_step_in_quiet_gaussian_noise_is_not_taken_for_two_modes() -> None:
    """Thirteen llama-bench builds at 1 % noise with an 11 % step: a few differences of
    2 % among many of 1 % are no second mode, and the step keeps its size."""
    values = [46.24, 46.95, 46.03, 46.04, 46.06, 47.02, 41.03, 41.14, 40.48, 41.16, 41.2,
              41.36, 41.37]  # fmt: skip
    flat, gap = demode(values)
    assert gap is None and flat == values
    [step] = detect(entries(values))
    assert step.first_bad_run == "pi5-run-006" and -0.12 < step.change < -0.10
