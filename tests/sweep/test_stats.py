"""benchlab.detect.stats against published values (t tables; textbook examples)."""

from __future__ import annotations

import math

import pytest

from benchlab.detect import stats


def test_mean_and_sample_stddev_of_a_textbook_example() -> None:
    values = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]
    assert stats.mean(values) == 5.0
    # population stddev is 2; the sample one is sqrt(32 / 7)
    assert stats.stddev(values) == pytest.approx(math.sqrt(32 / 7))


@pytest.mark.parametrize(
    ("df", "expected"),
    [(1, 12.706), (2, 4.303), (5, 2.571), (10, 2.228), (20, 2.086), (30, 2.042), (31, 1.96)],
)
def test_t_quantiles_match_the_published_table(df: int, expected: float) -> None:
    assert stats.t_quantile(df) == pytest.approx(expected, abs=0.001)


def test_confidence_interval_of_known_values() -> None:
    # n = 8, mean 5, s = 2.138: half width = 2.365 * 2.138 / sqrt(8) = 1.788
    low, high = stats.confidence_interval([2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]) or (0, 0)
    assert (low, high) == (pytest.approx(3.2122, abs=1e-3), pytest.approx(6.7878, abs=1e-3))
    summary = stats.summarize([10.0, 12.0, 11.0])
    assert summary.n == 3 and summary.mean == 11.0 and summary.stddev == 1.0
    assert summary.ci_low == pytest.approx(11 - 4.303 / math.sqrt(3))
    assert summary.ci_high == pytest.approx(11 + 4.303 / math.sqrt(3))


def test_one_value_has_no_spread_and_no_values_is_an_error() -> None:
    assert stats.summarize([3.0]) == stats.SeriesStats(1, 3.0, None, None, None)
    with pytest.raises(ValueError):
        stats.mean([])
    with pytest.raises(ValueError):
        stats.summarize([1.0, float("nan")])
    with pytest.raises(ValueError):
        stats.t_quantile(0)
