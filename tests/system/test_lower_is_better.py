"""Memory and energy are catalog metrics where smaller wins: `bench best` picks the smallest,
through the loaded catalog and through the columnar cache alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.kit.catalog import write_v3_catalog
from tests.kit.entries import make_entry

from benchlab.layout import Store
from benchlab.metrics import LOWER_IS_BETTER, lower_is_better
from benchlab.query.colcache import CACHE_NAME, MODE_ENV

RUNS = (
    # run id, machine, peak tok/s, peak RSS MiB, J/token
    ("run-a", "laptop", 900.0, 300.0, 0.5),
    ("run-b", "laptop", 700.0, 120.0, 0.9),
    ("run-c", "pi5", 100.0, 200.0, 0.2),
    ("run-d", "pi5", 120.0, None, None),  # not measured: never the best, never 0
)


def write_catalog(root: Path) -> None:
    runs = []
    for i, (run_id, machine, peak, rss, jpt) in enumerate(RUNS):
        entry = make_entry(run_id, machine, f"2025-01-0{i + 1}T12:00:00Z", peak_tok_per_sec=peak)
        entry.update({k: v for k, v in (("peak_rss_mb", rss), ("joules_per_token", jpt)) if v})
        runs.append(entry)
    write_v3_catalog(root, runs)


def best(bench, *args: str) -> list[str]:
    code, out, err = bench("best", *args, "--format", "json")
    assert code == 0, err
    return [row["run_id"] for row in json.loads(out)]


def test_memory_and_energy_are_lower_is_better():
    assert {"peak_rss_mb", "gpu_mem_peak_mb", "joules_per_token"} <= LOWER_IS_BETTER
    assert lower_is_better("peak_rss_mb") and not lower_is_better("peak_tok_per_sec")


@pytest.mark.parametrize("mode", ["never", "always"])
def test_best_picks_the_smallest_memory_and_energy(
    store: Path, bench, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    write_catalog(store)
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    monkeypatch.setenv(MODE_ENV, mode)
    # The best single run (--ever): the smallest value wins.
    assert best(bench, "--ever", "--metric", "peak_rss_mb") == ["run-b"]
    assert best(bench, "--ever", "--metric", "peak_rss_mb", "--by", "machine") == [
        "run-b",
        "run-c",
    ]
    assert best(bench, "--ever", "--metric", "peak_tok_per_sec") == ["run-a"]  # higher wins
    # The current level (the default): laptop's two runs average 210 MiB, pi5's one is 200,
    # so pi5 is the smaller today; a row names its series' newest run.
    assert best(bench, "--metric", "peak_rss_mb") == ["run-c"]
    assert best(bench, "--metric", "peak_rss_mb", "--by", "machine") == ["run-c", "run-b"]
    assert best(bench, "--metric", "joules_per_token") == ["run-c"]
    assert best(bench, "--metric", "peak_tok_per_sec") == ["run-b"]  # laptop's level, 800
    cache = Store(store).query_cache.parent / CACHE_NAME
    assert cache.is_file() == (mode == "always")  # the columnar path answered, or not
