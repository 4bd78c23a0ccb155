"""A level of one run takes its interval from that run's repeats (ARCHITECTURE.md, The
current level): on a llama-bench history of one run per series (llama-bench's five repeats
kept as `samples_ts`), `bench best`, `bench table`, the columnar cache, the site's tables,
its level charts and its series page all give the level's ± as the run's own mean ± t·sd/√n,
and say that it is the spread within one run."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from tests.kit.cli import run_cli
from tests.kit.llama_steps import DECODE, MACHINES, PREFILL, REPEATS, write_outputs

from benchlab.catalog.read import load_catalog
from benchlab.cli import main
from benchlab.detect.stats import t_quantile
from benchlab.publish.charts.levels import _level_text
from benchlab.publish.pages.series import level_of
from benchlab.publish.tables import cell_level
from benchlab.query.colcache import open_columns
from benchlab.query.filters import Filters
from benchlab.query.level import series_levels
from benchlab.query.verbs import best_runs


def _one_run_store(store: Path, scratch: Path, builds: int = 1) -> Path:
    """The first `builds` llama-bench outputs of one machine of the generated history,
    migrated and built: one run per series (pp512 and tg128) with `builds` 1."""
    paths = write_outputs(scratch)[MACHINES[0]][:builds]
    argv = ["--store", str(store), "migrate", *map(str, paths), "--machine-id", MACHINES[0]]
    assert main(argv) == 0
    assert main(["--store", str(store), "catalog", "build"]) == 0
    return store / "catalog.json"


def _expected_half(entry: dict[str, Any], metric: str) -> float:
    held = entry["metric_samples"][metric]
    assert held["n"] == REPEATS
    return t_quantile(held["n"] - 1) * held["sd"] / math.sqrt(held["n"])


def test_a_one_run_level_has_the_interval_of_its_repeats(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    catalog = _one_run_store(store, tmp_path / "files")
    [run] = [e for e in load_catalog(catalog).runs if e.get(DECODE) is not None]
    half = _expected_half(run, DECODE)
    assert half > 0
    base = ("--store", str(store))
    code, out, _ = run_cli(
        capsys, *base, "best", "--metric", DECODE, "--by", "series", "--format", "json"
    )
    assert code == 0
    [row] = json.loads(out)
    level = row["level"]
    assert level["n"] == 1
    assert level["pm95"] == pytest.approx(half)
    assert level["ci95"] == pytest.approx([run[DECODE] - half, run[DECODE] + half])
    assert (level["interval_of"], level["repeats"]) == ("repeats", REPEATS)
    code, out, _ = run_cli(capsys, *base, "best", "--metric", DECODE, "--by", "series")
    assert code == 0
    assert f"± of {REPEATS} repeats in 1 run" in out
    assert f"{half:.2f}" in out
    code, out, _ = run_cli(capsys, *base, "table", "--format", "csv")
    assert code == 0
    assert f"± of {REPEATS} repeats in 1 run" in out


def test_the_columns_and_the_loaded_catalog_agree_on_it(store: Path, tmp_path: Path) -> None:
    catalog = _one_run_store(store, tmp_path / "files")
    loaded = load_catalog(catalog)
    columns = open_columns(catalog, min_bytes=0)
    assert columns is not None
    for metric in (PREFILL, DECODE):
        fast = best_runs(columns, Filters(), metric, "series")
        slow = best_runs(loaded, Filters(), metric, "series")
        assert fast == slow
        assert [row["level"]["interval_of"] for row in fast] == ["repeats"]


def test_the_site_shows_it_as_the_spread_within_one_run(store: Path, tmp_path: Path) -> None:
    catalog = _one_run_store(store, tmp_path / "files")
    runs = load_catalog(catalog).runs
    [item] = series_levels(runs, PREFILL)
    [run] = [e for e in runs if e.get(PREFILL) is not None]
    half = _expected_half(run, PREFILL)
    assert item.level.pm == pytest.approx(half)
    text, _ = cell_level(item, PREFILL)
    assert f"± {half:,.1f}" in text
    assert "within 1 run" in text
    assert f"its {REPEATS} repeats" in _level_text(item)
    page = level_of([run], PREFILL)
    assert page is not None
    assert (page["pm"], page["repeats"]) == (pytest.approx(half), REPEATS)


def test_two_runs_give_the_interval_of_runs(store: Path, tmp_path: Path) -> None:
    """A segment of two runs or more: the runs' own t-interval, not a run's repeats."""
    catalog = _one_run_store(store, tmp_path / "files", builds=3)
    [item] = series_levels(load_catalog(catalog).runs, DECODE)
    assert item.level.n == 3
    assert item.level.repeats is None
    assert item.level.as_json(DECODE)["interval_of"] == "runs"
    text, _ = cell_level(item, DECODE)
    assert "within 1 run" not in text
