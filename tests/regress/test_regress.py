"""Step detection and latest-versus-baseline checks on histories with known answers."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchlab.detect.baseline import compare_latest, parse_threshold
from benchlab.detect.cuts import Thresholds, _ranks, best_split, find_steps
from benchlab.detect.history import histories
from benchlab.detect.regress import detect
from benchlab.errors import QueryError
from benchlab.identity import series_id


def noisy(levels: list[tuple[int, float]], cov: float = 0.02, seed: int = 1) -> list[float]:
    rng = np.random.default_rng(seed)
    values = [level for count, level in levels for _ in range(count)]
    return [float(v * (1 + rng.normal(0, cov))) for v in values]


def entries(values: list[float], machine: str = "pi5", start: int = 0, **fields) -> list[dict]:
    """Catalog entry dicts (as `catalog.read.load_catalog` gives them), one per value."""
    out = []
    for i, value in enumerate(values, start=start):
        entry = {
            "run_id": f"{machine}-{fields.get('tag', 'run')}-{i:03d}",
            "machine_id": machine,
            "timestamp": f"2026-01-{1 + i // 24:02d}T{i % 24:02d}:00:00Z",
            "model": "SmolLM2-135M",
            "model_id": "smollm2-135m",
            "precision": "q8",
            "backend": "reference",
            "backend_version": "benchlab 0.1.0",
            "mode": "decode",
            "threads": 2,
            "prompt_tokens": 32,
            "gen_tokens": 16,
            "status": "ok",
            "tags": [],
            "peak_tok_per_sec": value,
        }
        entry.update({k: v for k, v in fields.items() if k != "tag"})
        entry["series"] = series_id(entry)
        out.append(entry)
    return out


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
    assert find_steps(values, Thresholds(min_change=0.01)) == []  # ... but below what matters


def test_too_short_a_history_has_no_split() -> None:
    assert best_split([1.0, 2.0, 3.0]) is None


@settings(max_examples=25, deadline=None)
@given(scale=st.floats(min_value=0.01, max_value=1e6), seed=st.integers(0, 10_000))
def test_steps_do_not_depend_on_units(scale: float, seed: int) -> None:
    values = noisy([(12, 100.0), (12, 85.0)], cov=0.05, seed=seed)
    plain, scaled = find_steps(values), find_steps([v * scale for v in values])
    assert [i for i, _ in plain] == [i for i, _ in scaled]
    assert [p for _, p in plain] == pytest.approx([p for _, p in scaled], rel=1e-6)


def test_detect_reports_size_first_bad_run_and_confidence() -> None:
    history = entries(noisy([(20, 100.0), (20, 80.0)]))
    history += entries(noisy([(30, 50.0)], seed=9), precision="f32", tag="f32")
    [step] = detect(history)
    assert step.identity["precision"] == "q8" and step.series == history[0]["series"]
    assert step.label == "pi5 smollm2-135m q8 reference t2 p32/n16"
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
        entry["status"] = "failed"
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


@pytest.mark.parametrize(
    ("text", "value"), [("5%", 0.05), ("0.05", 0.05), ("0.1", 0.1), ("12.5%", 0.125), ("0", 0.0)]
)
def test_threshold_spellings(text: str, value: float) -> None:
    assert parse_threshold(text) == pytest.approx(value)


def test_five_percent_and_a_twentieth_are_the_same_threshold() -> None:
    assert parse_threshold("5%") == parse_threshold("0.05")


@pytest.mark.parametrize("text", ["5", "1", "12.5", "100"])
def test_a_bare_number_of_one_or_more_is_refused_as_ambiguous(text: str) -> None:
    """`--threshold 5` once meant 500 %: a CI gate that passed every regression."""
    with pytest.raises(QueryError, match=rf"--threshold '{text}' is ambiguous: write {text}%"):
        parse_threshold(text)


@pytest.mark.parametrize("text", ["five", "-5%", "nan", "2000%"])
def test_a_bad_threshold_names_the_flag(text: str) -> None:
    with pytest.raises(QueryError, match=f"--threshold '{text}'"):
        parse_threshold(text)


def test_runs_that_differ_only_in_threads_are_two_series() -> None:
    t1 = entries([50.0] * 4, threads=1, tag="t1")
    t2 = entries([70.0] * 4, threads=2, tag="t2")
    grouped = histories(t1 + t2)
    assert len(grouped) == 2
    assert sorted(len(runs) for runs in grouped.values()) == [4, 4]
    for runs in grouped.values():
        assert len({entry["threads"] for entry, _ in runs}) == 1


def test_latest_is_compared_only_within_its_series() -> None:
    """The default local sweep: t1 and t2 of one model, one run each, then a second sweep.
    A t2 run is ~30 % faster than a t1 run; comparing across threads was a false alarm."""
    first = entries([50.0], threads=1, tag="t1") + entries([70.0], threads=2, tag="t2")
    assert compare_latest(first, "pi5") == []  # one run per series: nothing to compare
    second = entries([50.5], threads=1, tag="t1", start=1)
    second += entries([69.5], threads=2, tag="t2", start=1)
    results = compare_latest(first + second, "pi5", threshold=0.05)
    assert len(results) == 2 and not any(r.regression for r in results)
    assert {r.identity["threads"] for r in results} == {1, 2}


def test_a_build_change_is_a_step_inside_the_series_with_versions_either_side() -> None:
    values = noisy([(20, 100.0), (20, 80.0)])
    history = entries(values[:20]) + entries(
        values[20:], start=20, backend_version="benchlab 0.2.0", revision="v2"
    )
    grouped = histories(history)
    assert len(grouped) == 1  # the version axis is not part of the series
    [step] = detect(history)
    assert step.first_bad_run == "pi5-run-020" and step.kind == "regression"
    assert (step.version_before, step.version_after) == ("benchlab 0.1.0", "benchlab 0.2.0 rev v2")
    assert (step.revision_before, step.revision_after) == (None, "v2")
    assert step.version_changed
    row = step.as_row()
    assert row["version_before"] == "benchlab 0.1.0" and row["version_changed"] is True
    assert row["threads"] == 2 and row["series"] == history[0]["series"]


def test_a_wobble_no_larger_than_the_noise_is_not_a_confirmed_step() -> None:
    """A -6 % shift in +-10 % uniform noise: the old detector called such wobbles certain."""
    rng = np.random.default_rng(5)
    values = [100 * (0.94 if i >= 20 else 1.0) * rng.uniform(0.9, 1.1) for i in range(40)]
    assert best_split(values)[1] < 0.01  # significant by ranks alone ...
    assert find_steps(values) == []  # ... but about one deviation of the series' own noise


def test_a_recent_step_with_too_few_runs_to_confirm_is_a_suspect() -> None:
    rng = np.random.default_rng(3)
    values = [100 * rng.uniform(0.9, 1.1) for _ in range(11)] + [60.0, 61.0]
    [step] = detect(entries(values))
    assert step.status == "suspect" and step.kind == "regression"
    assert step.first_bad_run == "pi5-run-011" and step.runs_after == 2
    assert step.confidence == pytest.approx(1 - 2 / 78)  # the 2 newest of 13 the 2 lowest
    assert detect(entries(values), suspects=False) == []


def test_suspects_of_one_machine_corroborate_each_other() -> None:
    rng = np.random.default_rng(4)
    history = []
    for model in ("a", "b", "c"):
        values = [100 * rng.uniform(0.9, 1.1) for _ in range(11)] + [60.0]
        history += entries(values, tag=model, model_id=model, model=model)
    steps = detect(history)  # one newest run each: kept because they corroborate
    assert len(steps) == 3 and {s.status for s in steps} == {"suspect"}
    assert all(s.corroborated_by == 2 and s.runs_after == 1 for s in steps)
    assert all(s.confidence > 0.9 > 1 - 2 / 12 for s in steps)  # stronger than each alone
    assert detect(history[:12]) == []  # one series alone: its single newest run is no step


def test_one_newest_run_beyond_the_rest_is_not_a_suspect() -> None:
    """As often a wedged run as a step: it waits for a second run."""
    rng = np.random.default_rng(3)
    values = [100 * rng.uniform(0.9, 1.1) for _ in range(11)] + [60.0]
    assert detect(entries(values)) == []
    assert [s.status for s in detect(entries([*values, 61.0]))] == ["suspect"]


def test_fisher_combined_matches_the_chi_squared_tail() -> None:
    from benchlab.detect.cuts import fisher_combined

    assert fisher_combined([0.05]) == pytest.approx(0.05)
    assert fisher_combined([0.05, 0.05]) == pytest.approx(0.0175, abs=1e-4)
    assert fisher_combined([]) == 1.0


def test_the_window_is_counted_back_from_the_newest_run() -> None:
    from benchlab.detect.regress import recent, window_start

    history = entries(noisy([(20, 100.0), (20, 80.0)]))
    since = window_start(history, 1)
    assert since == "2026-01-01T15:00:00Z"  # newest run 2026-01-02T15:00, less one day
    [step] = detect(history)
    assert recent([step], since) == [step]
    assert recent([step], "2026-01-02T00:00:00Z") == []
    assert window_start([], 14) is None


def _best_split_reference(
    values: list[float], min_segment: int = 3, permutations: int = 999, seed: int = 0
) -> tuple[int, float]:
    """best_split as first written (a permuted copy, a scan with temporaries): the in-place
    version must give the same split and the same p-value."""
    ranks = _ranks(values)
    n = len(ranks)
    left = np.arange(min_segment, n - min_segment + 1)

    def scan(rows: np.ndarray) -> np.ndarray:
        u = np.cumsum(rows, axis=-1)[..., left - 1] - left * (left + 1) / 2.0
        spread = np.sqrt(left * (n - left) * (n + 1) / 12.0)
        return np.abs(u - left * (n - left) / 2.0) / spread

    observed = scan(ranks[np.newaxis, :])[0]
    rng = np.random.default_rng(seed)
    null_max = scan(rng.permuted(np.tile(ranks, (permutations, 1)), axis=1)).max(axis=1)
    hits = int(np.count_nonzero(null_max >= observed.max() - 1e-12))
    return int(np.argmax(observed)) + min_segment, (1 + hits) / (permutations + 1)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(0.0, 100.0), min_size=6, max_size=300),
    st.integers(2, 5),
    st.integers(0, 2**32 - 1),
)
def test_best_split_in_place_is_the_reference(
    values: list[float], min_segment: int, seed: int
) -> None:
    if len(values) < 2 * min_segment:
        return
    ours = best_split(values, min_segment=min_segment, permutations=199, seed=seed)
    assert ours == _best_split_reference(values, min_segment, 199, seed)
