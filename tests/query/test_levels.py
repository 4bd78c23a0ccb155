"""One meaning of "best" (ARCHITECTURE.md, The current level): `bench best` and
`bench table` answer with each series' current level, `--ever` with the best run ever; a
marked outlier never wins nor counts; a noisy level is flagged; the columnar cache and the
loaded catalog give the same levels."""

from __future__ import annotations

import json
import random
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.kit.catalog import write_v3_catalog
from tests.kit.cli import run_cli
from tests.kit.entries import make_entry

from benchlab.catalog.read import load_catalog
from benchlab.query.colcache import open_columns
from benchlab.query.filters import Filters
from benchlab.query.level import LEVEL_WINDOW, current_level
from benchlab.query.verbs import best_runs, machine_table

START = datetime(2025, 5, 1, tzinfo=timezone.utc)


def _stamp(day: float) -> str:
    return (START + timedelta(days=day)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _series(
    machine: str, values: list[float], *, threads: int = 4, first_day: float = 0.0
) -> list[dict[str, Any]]:
    """One series: a run a day with these peak rates, oldest first."""
    out = []
    for i, value in enumerate(values):
        day = first_day + i
        stamp = _stamp(day)
        run_id = f"{machine}-smollm2-135m-q8-batch-a1b2c3d4-{stamp[:10].replace('-', '')}T{i:06d}Z"
        out.append(
            make_entry(
                run_id,
                machine,
                stamp,
                threads=threads,
                peak_tok_per_sec=value,
                decode_tok_per_sec=value / 10,
                prefill_tok_per_sec=value * 2,
                baseline_tok_per_sec=value / 8,
                speedup=8.0,
            )
        )
    return out


def _noisy(level: float, n: int, seed: int, spread: float = 0.01) -> list[float]:
    rng = random.Random(seed)
    return [round(level * rng.uniform(1 - spread, 1 + spread), 2) for _ in range(n)]


REGRESSED = _noisy(11851.0, 30, 1) + _noisy(11851.0 * 0.72, 20, 2)
"""A series that regressed 28% twenty runs ago and stayed there."""


@pytest.fixture
def regressed_store(store: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    runs = _series("box", REGRESSED)
    runs += _series("pi5", _noisy(300.0, 10, 3))
    write_v3_catalog(store, runs)
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    return store


def test_current_level_is_the_newest_segment() -> None:
    level = current_level(REGRESSED)
    assert level is not None
    assert level.start == 30 and level.n == 20 and level.steps >= 1
    assert level.value == pytest.approx(sum(REGRESSED[30:]) / 20)
    assert level.ci_low is not None and level.ci_low < level.value < level.ci_high
    assert not level.unstable


def test_a_flat_history_is_one_segment_and_one_run_has_no_interval() -> None:
    flat = current_level(_noisy(100.0, 12, 4))
    assert flat is not None and (flat.start, flat.steps, flat.n) == (0, 0, 12)
    alone = current_level([5.0])
    assert alone is not None and (alone.value, alone.n, alone.pm) == (5.0, 1, None)
    assert current_level([]) is None


def test_the_segmentation_looks_at_the_newest_window_only() -> None:
    old_step = _noisy(50.0, 40, 5) + _noisy(100.0, LEVEL_WINDOW, 6)
    level = current_level(old_step)
    assert level is not None and level.start == 40 and level.n == LEVEL_WINDOW


def test_noisy_repeats_are_flagged_unstable() -> None:
    level = current_level([100.0, 130.0, 80.0, 120.0, 90.0])
    assert level is not None and level.cv is not None and level.cv > 0.10 and level.unstable


def test_best_is_the_current_level_and_ever_the_old_best(
    regressed_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(capsys, "best", "--format", "json")
    assert (code, err) == (0, "")
    [row] = json.loads(out)
    level = row["level"]
    assert row["machine_id"] == "box" and level["n"] == 20
    assert level["value"] == pytest.approx(sum(REGRESSED[30:]) / 20)
    assert level["value"] < 0.75 * max(REGRESSED)  # not the best run of before the step
    assert row["run_id"].endswith("T000049Z")  # the newest run names the row
    code, out, _ = run_cli(capsys, "best", "--ever", "--format", "json")
    [ever] = json.loads(out)
    assert ever["peak_tok_per_sec"] == max(REGRESSED) and "level" not in ever
    code, out, _ = run_cli(capsys, "best")
    assert code == 0
    assert f"{sum(REGRESSED[30:]) / 20:.2f}" in out and "±95%" in out and "runs" in out


def test_table_rows_are_levels_with_their_noise(
    regressed_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(capsys, "table", "--format", "json")
    assert code == 0
    rows = {row["machine_id"]: row for row in json.loads(out)}
    box = rows["box"]
    assert box["levels"]["peak_tok_per_sec"] == pytest.approx(sum(REGRESSED[30:]) / 20)
    assert box["levels"]["decode_tok_per_sec"] == pytest.approx(sum(REGRESSED[30:]) / 200)
    assert box["level"]["pm95"] > 0 and box["level"]["unstable"] is False
    code, out, _ = run_cli(capsys, "table")
    header = out.splitlines()[0]
    assert "backend" in header and "±95%" in header and "noise" in header
    assert "threads: the CPU threads the run used" in out  # the columns are explained


def test_an_unstable_level_is_flagged_in_text_and_json(
    store: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    write_v3_catalog(store, _series("busy", [100.0, 160.0, 70.0, 130.0, 60.0]))
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    code, out, _ = run_cli(capsys, "best", "--format", "json")
    assert code == 0 and json.loads(out)[0]["level"]["unstable"] is True
    _, out, _ = run_cli(capsys, "table")
    assert " unstable " in out.splitlines()[2] + " "


def test_a_one_run_level_whose_repeats_varied_says_run_unstable(
    store: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first sweep's level is one run: no spread of its own, so the run's own unstable tag
    (its repeats varied past max_cv) is the noise the table shows, never a blank."""
    runs = _series("busy", [100.0]) + _series("quiet", [50.0])
    runs[0]["tags"] = [*runs[0]["tags"], "unstable"]
    write_v3_catalog(store, runs)
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    _, out, _ = run_cli(capsys, "table")
    rows = {line.split()[1]: line for line in out.splitlines()[2:4]}
    assert " run unstable " in rows["busy"] and "unstable" not in rows["quiet"]


def test_a_marked_outlier_never_wins_nor_counts(
    store: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = _series("box", [100.0, 101.0, 99.0, 5000.0])
    runs[-1]["tags"] = [*runs[-1]["tags"], "outlier"]
    write_v3_catalog(store, runs)
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    for argv in (["best"], ["best", "--ever"], ["table"], ["table", "--ever"]):
        code, out, _ = run_cli(capsys, *argv, "--format", "json")
        [row] = json.loads(out)
        assert code == 0 and row["run_id"] != runs[-1]["run_id"], argv
        assert row.get("level", {"n": 3})["n"] == 3
        assert row.get("level", {"value": 0})["value"] < 200


# --- the columns cache gives the same levels ---------------------------------------------


@st.composite
def histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A few series, each with up to two steps, some runs on one day (ties on the date)."""
    runs: list[dict[str, Any]] = []
    for s in range(draw(st.integers(1, 3))):
        levels = draw(st.lists(st.sampled_from((50.0, 100.0, 140.0)), min_size=1, max_size=3))
        per = draw(st.integers(1, 12))
        values = [
            v * draw(st.sampled_from((0.98, 1.0, 1.01, 1.03))) for v in levels for _ in range(per)
        ]
        series = _series(f"m{s}", values, threads=s + 1)
        per_day = draw(st.integers(1, 3))  # runs of one day: ordered by time, then run id
        for i, entry in enumerate(series):
            hour = draw(st.sampled_from(("00", "00", "07", "23")))
            entry["timestamp"] = f"{_stamp(i // per_day)[:11]}{hour}:00:00Z"
            if draw(st.integers(0, 9)) == 0:
                entry["tags"] = [*entry["tags"], "outlier"]
        runs += series
    return runs


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs=histories())
def test_the_columns_and_the_entries_agree_on_levels(runs: list[dict[str, Any]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = write_v3_catalog(Path(tmp), runs)
        loaded = load_catalog(path)
        columns = open_columns(path, min_bytes=0)
        assert columns is not None
        for ask in (Filters(), Filters(status="ok"), Filters(machine="m0")):
            assert machine_table(columns, ask) == machine_table(loaded, ask)
            for by in (None, "machine", "series"):
                fast = best_runs(columns, ask, "peak_tok_per_sec", by)
                assert fast == best_runs(loaded, ask, "peak_tok_per_sec", by)


# --- a record's partial metrics -----------------------------------------------------------


def test_table_keeps_the_prefill_and_baseline_show_prints(
    store: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # An agent that reported only some metrics in record.json: kernel.json and batch.json
    # still hold the prefill and the baseline, and the catalog takes them from there.
    from tests.kit.runs import write_run

    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    run_id = "box-smollm2-135m-q8-batch-a1b2c3d4-20250501T000000Z"
    run_dir = write_run(store, run_id, machine_id="box")
    path = run_dir / "record.json"
    record = json.loads(path.read_text())
    shown_prefill = record["metrics"]["prefill_tok_per_sec"]
    shown_baseline = record["metrics"]["baseline_tok_per_sec"]
    assert shown_prefill is not None and shown_baseline is not None
    record["metrics"] = {"peak_tok_per_sec": record["metrics"]["peak_tok_per_sec"]}
    path.write_text(json.dumps(record))
    assert run_cli(capsys, "catalog", "build")[0] == 0
    code, out, _ = run_cli(capsys, "table", "--format", "json")
    [row] = json.loads(out)
    assert code == 0
    assert row["prefill_tok_per_sec"] == shown_prefill
    assert row["baseline_tok_per_sec"] == shown_baseline
    assert row["levels"]["prefill_tok_per_sec"] == shown_prefill


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs=histories(), window=st.integers(1, 8))
def test_the_columns_and_the_entries_agree_past_the_window(
    runs: list[dict[str, Any]], window: int
) -> None:
    # A small window: the columns order only the runs that reach into it exactly.
    import benchlab.query.colcache.answer as answer
    import benchlab.query.level as level

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(level, "LEVEL_WINDOW", window)
        patch.setattr(answer, "LEVEL_WINDOW", window)
        test_the_columns_and_the_entries_agree_on_levels.hypothesis.inner_test(runs)  # type: ignore[attr-defined]


@settings(max_examples=60, deadline=None)
@given(
    plan=st.lists(
        st.tuples(
            st.sampled_from(["pi5", "gpu-box", "nuc"]),
            st.integers(1, 12),  # runs
            st.integers(0, 3),  # day offset: same stamps across series, ties by run id
            st.booleans(),  # decode missing on every other run
        ),
        min_size=1,
        max_size=5,
    ),
    seed=st.integers(0, 10_000),
)
def test_levels_of_many_metrics_are_the_levels_of_each(plan: list[Any], seed: int) -> None:
    """Grouping the runs once for every metric (`series_levels_of`, what a page's chart
    uses) answers each metric exactly as `series_levels` does: same series, order, levels
    and newest runs."""
    from benchlab.query.level import series_levels, series_levels_of

    entries: list[dict[str, Any]] = []
    for number, (machine, count, offset, gaps) in enumerate(plan):
        values = _noisy(100.0 * (number + 1), count, seed + number, spread=0.05)
        runs = _series(machine, values, threads=number + 1, first_day=offset)
        for i, run in enumerate(runs):
            if gaps and i % 2:
                run.pop("decode_tok_per_sec", None)
        entries += runs
    random.Random(seed).shuffle(entries)
    metrics = ("peak_tok_per_sec", "decode_tok_per_sec", "ttft_ms")
    together = series_levels_of(entries, metrics, {})
    for metric in metrics:
        assert together[metric] == series_levels(entries, metric, {})


@settings(max_examples=40, deadline=None)
@given(
    count=st.integers(1, 3 * LEVEL_WINDOW),
    step_at=st.integers(0, 3 * LEVEL_WINDOW),
    seed=st.integers(0, 10_000),
)
def test_compare_reads_the_newest_window_as_the_level_does(
    count: int, step_at: int, seed: int
) -> None:
    """`side_values` reads runs newest first and stops at LEVEL_WINDOW that count (a
    million-run fleet's sides were whole histories): the repeats are the whole history's
    newest segment, outliers and runs without the metric skipped as before."""
    from benchlab.query.compare import side_values

    values = [v * (0.8 if i >= step_at else 1.0) for i, v in enumerate(_noisy(100.0, count, seed))]
    runs = _series("pi5", values)
    for i, run in enumerate(runs):
        if i % 7 == 3:
            run.pop("peak_tok_per_sec")
        elif i % 11 == 5:
            run["tags"] = ["outlier"]
    history = [float(r["peak_tok_per_sec"]) for r in runs
               if "peak_tok_per_sec" in r and "outlier" not in r.get("tags", [])]  # fmt: skip
    level = current_level(history)
    assert side_values(runs, "peak_tok_per_sec") == (
        [] if level is None else history[level.start :]
    )
