"""Step detection and latest-versus-baseline checks on histories with known answers."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchlab.errors import QueryError
from benchlab.models import CatalogEntry
from benchlab.regress import (
    best_split,
    compare_latest,
    detect,
    find_steps,
    parse_threshold,
)


def noisy(levels: list[tuple[int, float]], cov: float = 0.02, seed: int = 1) -> list[float]:
    rng = np.random.default_rng(seed)
    values = [level for count, level in levels for _ in range(count)]
    return [float(v * (1 + rng.normal(0, cov))) for v in values]


def entries(values: list[float], machine: str = "pi5", **fields: str) -> list[CatalogEntry]:
    return [
        CatalogEntry(
            run_id=f"{machine}-run-{i:03d}",
            machine_id=machine,
            timestamp=f"2026-01-{1 + i // 24:02d}T{i % 24:02d}:00:00Z",
            model="SmolLM2-135M",
            precision=fields.get("precision", "q8"),
            backend="reference",
            mode="decode",
            peak_tok_per_sec=value,
        )
        for i, value in enumerate(values)
    ]


def test_a_20_percent_drop_is_found_where_it_happened() -> None:
    values = noisy([(20, 100.0), (20, 80.0)])
    [(index, p_value)] = find_steps(values)
    assert index == 20
    assert p_value <= 0.002


def test_a_step_free_history_with_an_outlier_run_has_no_step() -> None:
    values = noisy([(40, 100.0)])
    values[25] = 40.0  # one wedged run is not a step
    assert find_steps(values) == []


def test_two_steps_are_both_found() -> None:
    values = noisy([(15, 100.0), (15, 70.0), (15, 95.0)], seed=3)
    assert [index for index, _ in find_steps(values)] == [15, 30]


def test_a_significant_but_negligible_step_is_not_reported() -> None:
    values = noisy([(20, 100.0), (20, 99.5)], cov=0.0005)
    assert best_split(values)[1] < 0.01  # significant ...
    assert find_steps(values, min_change=0.01) == []  # ... but below the size that matters


def test_too_short_a_history_has_no_split() -> None:
    assert best_split([1.0, 2.0, 3.0]) is None


@settings(max_examples=25, deadline=None)
@given(scale=st.floats(min_value=0.01, max_value=1e6), seed=st.integers(0, 10_000))
def test_steps_do_not_depend_on_units(scale: float, seed: int) -> None:
    values = noisy([(12, 100.0), (12, 85.0)], cov=0.05, seed=seed)
    assert find_steps(values) == find_steps([v * scale for v in values])


def test_detect_reports_size_first_bad_run_and_confidence() -> None:
    history = entries(noisy([(20, 100.0), (20, 80.0)]))
    history += entries(noisy([(30, 50.0)], seed=9), precision="f32")
    [step] = detect(history)
    assert step.series.precision == "q8"
    assert step.first_bad_run == "pi5-run-020"
    assert step.last_good_run == "pi5-run-019"
    assert step.kind == "regression"
    assert step.change == pytest.approx(-0.2, abs=0.03)
    assert step.confidence >= 0.99


def test_an_improvement_is_not_a_regression() -> None:
    [step] = detect(entries(noisy([(20, 80.0), (20, 100.0)])))
    assert step.kind == "improvement"


def test_failed_runs_and_missing_values_are_not_history() -> None:
    history = entries(noisy([(20, 100.0), (20, 80.0)]))
    for entry in history[20:]:
        entry.status = "failed"
    assert detect(history) == []


def test_latest_against_the_median_of_previous_runs() -> None:
    history = entries([100.0, 101.0, 99.0, 100.0, 100.0, 90.0])
    [result] = compare_latest(history, "pi5", threshold=0.05)
    assert result.baseline_value == 100.0
    assert result.latest_run == "pi5-run-005"
    assert result.change == pytest.approx(-0.10)
    assert result.regression


def test_latest_against_a_named_baseline_within_threshold() -> None:
    history = entries([100.0, 101.0, 97.0])
    [result] = compare_latest(history, "pi5", baseline_run="pi5-run-000", threshold=0.05)
    assert result.baseline == "pi5-run-000"
    assert not result.regression


def test_unknown_machine_or_baseline_is_a_clear_error() -> None:
    history = entries([100.0, 101.0])
    with pytest.raises(QueryError, match="no ok runs"):
        compare_latest(history, "mac")
    with pytest.raises(QueryError, match="baseline run 'nope'"):
        compare_latest(history, "pi5", baseline_run="nope")


@pytest.mark.parametrize(("text", "value"), [("5%", 0.05), ("0.1", 0.1), ("12.5%", 0.125)])
def test_threshold_spellings(text: str, value: float) -> None:
    assert parse_threshold(text) == pytest.approx(value)


def test_a_bad_threshold_names_the_flag() -> None:
    with pytest.raises(QueryError, match="--threshold 'five'"):
        parse_threshold("five")
