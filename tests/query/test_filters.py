"""Filters and verbs as plain functions over a loaded catalog."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchlab.catalog.read import LoadedCatalog, load_catalog
from benchlab.errors import QueryError
from benchlab.query.filters import Filters, chronological, parse_date, select
from benchlab.query.verbs import best_runs, compare_runs, list_runs, machine_table, summarize

from .conftest import (
    LAPTOP_Q8,
    LAPTOP_Q8_LATER,
    LAPTOP_QWEN,
    MAC_Q8,
    MAC_QWEN,
    PI5_Q4,
    PI5_Q8_FAILED,
)


@pytest.fixture
def catalog(golden: Path) -> LoadedCatalog:
    return load_catalog(golden / "catalog.json")


def ids(rows: list[dict[str, object]]) -> list[str]:
    return [str(r["run_id"]) for r in rows]


def test_list_sorts_by_timestamp_then_run_id(catalog: LoadedCatalog) -> None:
    assert ids(list_runs(catalog, Filters())) == [
        MAC_Q8,
        LAPTOP_Q8,
        LAPTOP_Q8_LATER,
        PI5_Q8_FAILED,
        PI5_Q4,
        MAC_QWEN,
        LAPTOP_QWEN,
    ]
    same_time = [
        {"run_id": "b", "timestamp": "2025-01-01T00:00:00Z"},
        {"run_id": "a", "timestamp": "2025-01-01T00:00:00Z"},
    ]
    assert ids(chronological(same_time)) == ["a", "b"]


def test_limit_keeps_the_newest_still_oldest_first(catalog: LoadedCatalog) -> None:
    assert ids(list_runs(catalog, Filters(), limit=2)) == [MAC_QWEN, LAPTOP_QWEN]
    assert len(list_runs(catalog, Filters(), limit=100)) == 7
    assert list_runs(catalog, Filters(), limit=0) == []
    assert list_runs(catalog, Filters(), limit=-1) == []


@pytest.mark.parametrize("model", ["smollm2-135m", "SmolLM2-135M", "SMOLLM2-135M", "smollm2 135m"])
def test_model_matches_slug_or_name_case_insensitively(catalog: LoadedCatalog, model: str) -> None:
    # PI5_Q4 has no model_id: it is found through the slug of its display name.
    found = ids(select(catalog.runs, Filters(model=model)))
    assert sorted(found) == sorted([LAPTOP_Q8, LAPTOP_Q8_LATER, MAC_Q8, PI5_Q8_FAILED, PI5_Q4])


def test_model_does_not_match_a_prefix(catalog: LoadedCatalog) -> None:
    assert select(catalog.runs, Filters(model="smollm2")) == []


def test_machine_precision_tag_status(catalog: LoadedCatalog) -> None:
    def pick(**kw: object) -> list[str]:
        return sorted(ids(select(catalog.runs, Filters(**kw))))  # type: ignore[arg-type]

    assert pick(machine="MAC-M3PRO") == sorted([MAC_Q8, MAC_QWEN])
    assert pick(precision="BF16") == [MAC_QWEN]
    assert pick(tags=("smoke",)) == [MAC_Q8]
    assert pick(tags=("kernel", "smoke")) == [MAC_Q8]
    assert pick(tags=("smoke", "nope")) == []
    assert pick(status="failed") == [PI5_Q8_FAILED]
    assert len(pick(status="ok")) == 6
    assert pick(machine="pi5", precision="q4", status="ok") == [PI5_Q4]


def test_dates_are_inclusive(catalog: LoadedCatalog) -> None:
    def between(since: str | None, until: str | None) -> list[str]:
        rows = list_runs(catalog, Filters(since=since, until=until))
        return ids(rows)

    assert between("2025-01-07", "2025-01-07") == [LAPTOP_Q8_LATER, PI5_Q8_FAILED]
    assert between("2025-01-09", None) == [LAPTOP_QWEN]
    assert between(None, "2025-01-05") == [MAC_Q8]
    assert between("2025-01-10", None) == []


@pytest.mark.parametrize("text", ["2025-1-1", "20250101", "2025-13-01", "yesterday", ""])
def test_bad_dates_are_refused(text: str) -> None:
    with pytest.raises(QueryError, match=r"^--since: expected a date YYYY-MM-DD"):
        parse_date(text, "--since")


def test_best_ties_go_to_the_newer_run_then_the_smaller_id() -> None:
    runs = [
        {"run_id": "c", "machine_id": "m", "timestamp": "2025-01-01", "peak_tok_per_sec": 5.0},
        {"run_id": "b", "machine_id": "m", "timestamp": "2025-01-02", "peak_tok_per_sec": 5.0},
        {"run_id": "a", "machine_id": "n", "timestamp": "2025-01-02", "peak_tok_per_sec": 5.0},
        {"run_id": "d", "machine_id": "n", "timestamp": "2025-01-03", "peak_tok_per_sec": 4.0},
    ]
    for run in runs:
        run.update(model="M", precision="q8")
    catalog = LoadedCatalog(Path("catalog.json"), runs)
    assert ids(best_runs(catalog, Filters(), ever=True)) == ["a"]
    assert ids(best_runs(catalog, Filters(), by="machine", ever=True)) == ["a", "b"]


def test_best_skips_runs_without_the_metric(catalog: LoadedCatalog) -> None:
    best = best_runs(catalog, Filters(), "prefill_tok_per_sec", ever=True)
    assert ids(best) == [LAPTOP_Q8]
    with pytest.raises(QueryError, match="unknown metric 'nope'"):
        best_runs(catalog, Filters(), "nope")


def test_table_one_row_per_machine_best_first(catalog: LoadedCatalog) -> None:
    rows = machine_table(catalog, Filters(model="smollm2-135m", status="ok"), ever=True)
    assert ids(rows) == [LAPTOP_Q8, MAC_Q8, PI5_Q4]


def test_compare_ratios(catalog: LoadedCatalog) -> None:
    result = compare_runs(catalog, [MAC_QWEN, LAPTOP_QWEN, PI5_Q8_FAILED])
    by_metric = {m["metric"]: m for m in result.metrics}
    assert by_metric["peak_tok_per_sec"]["ratios"] == [1.0, 410.0 / 300.0, None]
    assert by_metric["speedup"]["ratios"] == [1.0, 1.0, None]
    # No prefill on the reference run: no ratio can be given.
    assert by_metric["prefill_tok_per_sec"]["values"] == [None, None, None]
    assert by_metric["prefill_tok_per_sec"]["ratios"] == [None, None, None]


def test_compare_ratio_against_zero_is_none() -> None:
    runs = [
        {"run_id": "a", "speedup": 0.0},
        {"run_id": "b", "speedup": 2.0},
    ]
    result = compare_runs(LoadedCatalog(Path("c.json"), runs), ["a", "b"])
    assert next(m for m in result.metrics if m["metric"] == "speedup")["ratios"] == [None, None]


def test_summary_groups(catalog: LoadedCatalog) -> None:
    rows = summarize(catalog, Filters(), "precision")
    assert [(r["precision"], r["count"], r["ok"], r["failed"]) for r in rows] == [
        ("bf16", 1, 1, 0),
        ("q4", 1, 1, 0),
        ("q8", 5, 4, 1),
    ]
    # ok q8 peaks: 410.0, 640.5, 850.0, 862.2; the failed pi5 run has none.
    assert rows[2]["median_peak_tok_per_sec"] == pytest.approx(745.25)
    assert rows[2]["max_peak_tok_per_sec"] == 862.2
    with pytest.raises(QueryError, match="--group-by"):
        summarize(catalog, Filters(), "week")


def test_filters_describe() -> None:
    filters = Filters(model="x", status="ok", tags=("a", "b"))
    assert filters.describe() == "--model x --status ok --tag a --tag b"
