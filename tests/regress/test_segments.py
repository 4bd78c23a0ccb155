"""The whole history of a series, segmented: every step (a regression, its fix, a later
one), which of them are still open at the newest run, the false discovery rate across many
series at once, and marked outliers left out."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.regress.test_regress import entries, noisy

from benchlab.detect.baseline import compare_latest
from benchlab.detect.cuts import current_segment, find_steps, segments
from benchlab.detect.history import histories
from benchlab.detect.regress import control_fdr, detect, recent, window_start
from benchlab.detect.segment import (
    SMALL,
    _despike_numpy,
    _last_numpy,
    _last_small,
    _noise_scale_numpy,
    despike,
    noise_scale,
)
from benchlab.detect.stats import OUTLIER_TAG
from benchlab.detect.steps import Step


def test_a_regression_later_fixed_is_two_steps_and_not_open() -> None:
    """-20 %, then back: the old detector (binary segmentation) reported nothing at all."""
    values = noisy([(15, 100.0), (10, 80.0), (15, 100.0)], seed=2)
    assert [index for index, _ in find_steps(values)] == [15, 25]
    regression, fix = detect(entries(values))
    assert (regression.kind, fix.kind) == ("regression", "improvement")
    assert regression.first_bad_run == "pi5-run-015" and fix.first_bad_run == "pi5-run-025"
    assert not regression.open
    assert segments(values) == [(0, 15), (15, 25), (25, 40)]
    assert current_segment(values) == (25, 40)


def test_a_regression_older_than_any_window_is_still_open() -> None:
    """-28 % at run 5 of 60, never fixed: out of a 14-day window, but open."""
    history = entries(noisy([(5, 100.0), (55, 72.0)], seed=4))
    [step] = detect(history)
    assert step.kind == "regression" and step.open and step.status == "confirmed"
    assert recent([step], window_start(history, 1)) == []  # not among the recent ...
    assert step.as_row()["open"] is True  # ... yet listed as open


def test_a_later_regression_after_a_fix_is_open_and_the_first_is_not() -> None:
    values = noisy([(12, 100.0), (8, 80.0), (12, 100.0), (8, 70.0)], seed=6)
    steps = detect(entries(values))
    assert [(s.first_bad_run[-3:], s.kind, s.open) for s in steps] == [
        ("012", "regression", False),
        ("020", "improvement", False),
        ("032", "regression", True),
    ]


@pytest.mark.parametrize("seed", range(8))
def test_a_noise_low_run_just_before_the_step_does_not_take_the_blame(seed: int) -> None:
    """The run before a -20 % step is 3 noise deviations low: still far nearer the level
    before than the level after, so the size of the change puts the cut after it."""
    values = noisy([(20, 100.0), (20, 80.0)], cov=0.01, seed=seed)
    values[19] = 97.0
    assert [index for index, _ in find_steps(values)] == [20]
    [step] = detect(entries(values))
    assert step.first_bad_run == "pi5-run-020" and step.last_good_run == "pi5-run-019"


def _noise_only(rng: np.random.Generator, model: str, n: int) -> list[float]:
    draw = {
        "gaussian": lambda: rng.normal(0, 0.03, n),
        "uniform": lambda: rng.uniform(-0.05, 0.05, n),
        "t3": lambda: rng.standard_t(3, n) * 0.02,
        "laplace": lambda: rng.laplace(0, 0.02, n),
        "wedged": lambda: np.where(rng.random(n) < 0.05, -0.3, rng.normal(0, 0.02, n)),
    }[model]()
    return list(100 * (1 + draw))


def test_hundreds_of_noise_series_at_once_yield_almost_no_step() -> None:
    """300 noise-only series (five noise models) and 5 with a real -25 % step, detected as
    one catalog: the real steps are all found, and at most one noise series has a
    confirmed step."""
    rng = np.random.default_rng(11)
    history = []
    models = ("gaussian", "uniform", "t3", "laplace", "wedged")
    for number in range(300):
        values = _noise_only(rng, models[number % 5], int(rng.choice([15, 30, 60])))
        history += entries(values, tag=f"n{number}", model_id=f"n{number}")
    for number in range(5):
        values = noisy([(15, 100.0), (15, 75.0)], cov=0.03, seed=100 + number)
        history += entries(values, tag=f"s{number}", model_id=f"s{number}")
    steps = detect(history)
    confirmed = [s for s in steps if s.status == "confirmed"]
    real = [s for s in confirmed if "-s" in s.first_bad_run]
    assert sorted(s.first_bad_run for s in real) == [f"pi5-s{n}-015" for n in range(5)]
    assert len(confirmed) - len(real) <= 1
    stepped = [s for s in steps if s.status != "outlier"]  # a run that came back is no step
    assert len(stepped) - len(real) <= 3  # suspects included


def _step(series: str, p_value: float, status: str = "confirmed") -> Step:
    return Step(
        series, series, "peak_tok_per_sec", "b", "t", "a", 100.0, 80.0, -0.2,
        1 - p_value, "regression", status=status, p_value=p_value,  # type: ignore[arg-type]
    )  # fmt: skip


def test_control_fdr_is_benjamini_hochberg_across_series() -> None:
    """Of 100 series tested at 0.01, p = 0.0001 is a discovery (<= 0.01 x 1/100); 0.0004 is
    not (> 0.01 x 2/100); a suspect passes as it is; one series alone keeps 0.0004."""
    steps = [_step("a", 0.0001), _step("b", 0.0004), _step("c", 0.005), _step("d", 0.2, "suspect")]
    kept = control_fdr(steps, tested=100, alpha=0.01)
    assert [s.series for s in kept] == ["a", "d"]
    assert [s.series for s in control_fdr(steps[1:2], tested=1)] == ["b"]
    # A series' p-value is its smallest times the steps it had: two at 0.00008 -> 0.00016.
    pair = [replace(_step("e", 0.00008), identity={"confirmed_in_series": 2})] * 2
    assert control_fdr(pair, tested=100) == []
    assert control_fdr(pair, tested=10) == pair


def test_marked_outliers_never_enter_the_history() -> None:
    """Three runs marked as outliers (a busy machine) would make a dip of three runs;
    marked, they are neither history nor a step, and the baseline leaves them out."""
    values = noisy([(30, 100.0)], seed=8)
    for index in (12, 13, 14):
        values[index] = 60.0
    history = entries(values)
    assert any(s.first_bad_run == "pi5-run-012" for s in detect(history))
    for entry in history[12:15]:
        entry["tags"] = [OUTLIER_TAG]
    [runs] = histories(history).values()
    assert len(runs) == 27 and all(entry["tags"] == [] for entry, _ in runs)
    assert detect(history) == []
    history[-1]["tags"] = [OUTLIER_TAG]  # the newest run marked: the latest is the one before
    [result] = compare_latest(history, "pi5")
    assert result.latest_run == "pi5-run-028"


def test_the_baseline_is_the_last_stable_segment_before_the_newest_runs() -> None:
    """-25 % ten runs ago: the last five runs are already slow; the segment before is not."""
    values = noisy([(20, 100.0), (10, 75.0)], seed=9)
    [result] = compare_latest(entries(values), "pi5", threshold=0.05)
    assert result.baseline == "median of 20 run(s) of the last stable segment"
    assert result.baseline_value == pytest.approx(100, rel=0.03)
    assert result.regression and result.change == pytest.approx(-0.25, abs=0.04)
    flat = noisy([(30, 100.0)], seed=9)
    [same] = compare_latest(entries(flat), "pi5", threshold=0.05)
    assert same.baseline == "median of 29 run(s) of the last stable segment"
    assert not same.regression


@settings(max_examples=300, deadline=None)
@given(
    values=st.lists(
        st.one_of(
            st.floats(-50, 50, allow_nan=False),
            st.sampled_from([0.0, 1.0, 1.0, 7.0]),  # ties, where the first minimum matters
        ),
        min_size=2,
        max_size=SMALL,
    ),
    min_segment=st.integers(1, 5),
)
def test_the_python_and_numpy_partitions_pick_the_same_cuts(
    values: list[float], min_segment: int
) -> None:
    """Short windows run the dynamic programme on Python floats, long ones on numpy arrays:
    a last-start that differs anywhere would move a cut, a level or a first bad run."""
    z = np.asarray(values, dtype=float)
    if len(z) < 2 * min_segment:
        return
    penalty = 3.0 * np.log(len(z))
    small = _last_small(z, penalty, min_segment)
    assert small == [int(start) for start in _last_numpy(z, penalty, min_segment)]


@settings(max_examples=300, deadline=None)
@given(
    values=st.lists(
        st.one_of(st.floats(-1e6, 1e6, allow_nan=False), st.sampled_from([0.0, 5.0, 5.0])),
        min_size=1,
        max_size=SMALL,
    ),
    cuts=st.lists(st.integers(-1, SMALL + 1), max_size=4),
)
def test_the_python_and_numpy_noise_and_despike_agree(values: list[float], cuts: list[int]) -> None:
    """Short windows estimate the noise and clip the spikes on Python floats: the same
    clipped runs as numpy, and the same noise to the last bits of a mean."""
    sigma = noise_scale(values, cuts)
    if len(values) >= 2:
        assert sigma == pytest.approx(_noise_scale_numpy(values, cuts), rel=1e-12)
        assert despike(values, sigma) == list(_despike_numpy(values, sigma))


@pytest.mark.parametrize("seed", range(6))
def test_a_long_history_is_cut_where_the_exact_programme_cuts_it(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past `LONG` runs the partition is coarse to fine (a million-run fleet's 2,000-run
    histories made the exact O(n^2) programme most of a site build): steps anywhere, a
    pulse of 30 runs among them, land on the runs the exact programme picks."""
    import benchlab.detect.segment as segment

    rng = np.random.default_rng(seed)
    n = 1500
    values = 100 + rng.normal(size=n)
    first, pulse = int(rng.integers(100, 600)), int(rng.integers(700, 1300))
    values[first:] -= 6.0
    values[pulse : pulse + 30] += 5.0
    coarse = find_steps(list(values))
    monkeypatch.setattr(segment, "LONG", 10**6)
    exact = find_steps(list(values))
    assert [i for i, _ in coarse] == [i for i, _ in exact] == [first, pulse, pulse + 30]
