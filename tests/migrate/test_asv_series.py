"""An asv history keeps its numbers: every benchmark x parameter combination is its own
series of time_s (seconds, lower is better) runs, one per commit, the commit its revision.

tests/data/asv_tiny is real asv 0.6.6 output, made by tests/migrate/make_asv_results.sh
(SANITIZE=1: the environment's name and Python path made neutral, no result touched): a
tiny package over five commits, `TimeSum.time_slow_sum` parameterised over n (100, 1000)
and kind (list, tuple), `time_join` and `track_items` plain, and a 2 ms sleep planted in
slow_sum from the fourth commit on. The slow test runs asv itself."""

from __future__ import annotations

import json
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest
from tests.kit.catalog import catalog_doc
from tests.kit.oracle import need_programs

from benchlab.cli import main
from benchlab.layout import read_model
from benchlab.models import RunManifest, RunRecord

ASV_TINY = Path(__file__).parent.parent / "data" / "asv_tiny"
MAKE = Path(__file__).parent / "make_asv_results.sh"
SLOW_SUM = "bench_tiny.TimeSum.time_slow_sum"
COMBOS = [f"(n={n}, kind={kind})" for n in (100, 1000) for kind in ("list", "tuple")]
SERIES = [f"{SLOW_SUM}{combo}" for combo in COMBOS] + [
    "bench_tiny.time_join",
    "bench_tiny.track_items",
]
COMMITS = 5
PLANTED = 1e-3
"""The planted sleep is 2 ms; slow_sum on 1,000 numbers takes microseconds without it."""


def _imported(store: Path) -> dict[str, list[tuple[RunManifest, RunRecord]]]:
    """Runs by series label (the manifest's model name), oldest commit first."""
    by_label: dict[str, list[tuple[RunManifest, RunRecord]]] = defaultdict(list)
    for manifest_path in (store / "runs" / "by-machine" / "tiny-box").glob("*/manifest.json"):
        manifest = read_model(manifest_path, RunManifest)
        record = read_model(manifest_path.parent / "record.json", RunRecord)
        by_label[manifest.model.name].append((manifest, record))
    for runs in by_label.values():
        runs.sort(key=lambda pair: pair[0].timestamp)
    return dict(by_label)


def _check_history(results: Path, store: Path) -> dict[str, list[tuple[RunManifest, RunRecord]]]:
    assert main(["--store", str(store), "migrate", str(results)]) == 0
    by_label = _imported(store)
    assert sorted(by_label) == sorted(SERIES)
    commits = {json.loads(p.read_text())["commit_hash"][:8] for p in results.glob("*/????*-*")}
    for label, runs in by_label.items():
        assert len(runs) == COMMITS, label
        assert {m.git.rev for m, _ in runs} == commits  # one point per commit
        assert all(r.status == "ok" for _, r in runs), label
    for combo in COMBOS:
        times = [r.metrics["time_s"] for _, r in by_label[f"{SLOW_SUM}{combo}"]]
        assert all(t < PLANTED for t in times[:3]), (combo, times)
        assert all(t > PLANTED for t in times[3:]), (combo, times)  # the planted slowdown
    assert [r.metrics["track_value"] for _, r in by_label["bench_tiny.track_items"]] == [42.0] * 5
    manifest, _ = by_label["bench_tiny.time_join"][0]
    assert manifest.config["unit"] == "seconds"
    return by_label


def test_every_benchmark_and_combination_is_its_own_series(store: Path) -> None:
    _check_history(ASV_TINY, store)
    created = len(list((store / "runs").rglob("manifest.json")))
    assert created == COMMITS * len(SERIES)
    assert main(["--store", str(store), "migrate", str(ASV_TINY)]) == 0  # again: nothing new
    assert len(list((store / "runs").rglob("manifest.json"))) == created


def test_asv_series_reach_the_catalog_and_the_verbs(
    store: Path, bench, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _check_history(ASV_TINY, store)
    assert main(["--store", str(store), "catalog", "build"]) == 0
    entries = catalog_doc(store / "catalog.json")["runs"]
    series: dict[str, list[dict]] = defaultdict(list)
    for entry in entries:
        series[entry["series"]].append(entry)
    assert len(series) == len(SERIES)
    assert sorted(len(runs) for runs in series.values()) == [COMMITS] * len(SERIES)
    assert all(e["revision"] for e in entries)
    slow = [e for e in entries if e.get("time_s") is not None and "1000" in e["model"]]
    assert slow and all(e["status"] == "ok" for e in slow)
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    capsys.readouterr()
    timed = [e for e in entries if e.get("time_s") is not None]
    code, out, err = bench("best", "--ever", "--metric", "time_s", "--format", "json")
    assert code == 0, err
    best = json.loads(out)  # a row per model (each asv benchmark is one), best first
    assert len(best) == len({e["model_id"] for e in timed})
    assert best[0]["time_s"] == min(e["time_s"] for e in timed)  # a time: the smallest wins
    code, out, err = bench("best", "--metric", "time_s", "--by", "series", "--format", "json")
    assert code == 0, err
    levels = json.loads(out)
    assert len(levels) == len({e["series"] for e in timed})
    values = [row["level"]["value"] for row in levels]
    assert values == sorted(values)  # the current levels, the smallest first
    code, out, err = bench(
        "regression", "--machine", "tiny-box", "--metric", "time_s", "--format", "json"
    )
    rows = json.loads(out)
    flagged = {row["label"] for row in rows if row["regression"]}
    slow_series = {row["label"] for row in rows if "time-slow-sum" in row["label"]}
    assert len(slow_series) == 4 and slow_series <= flagged, rows
    assert code == 1  # the latest commits are slower than the median before them


@pytest.mark.slow
@pytest.mark.integration
def test_a_fresh_asv_run_imports_the_same_way(store: Path, tmp_path: Path) -> None:
    """asv itself, on the tiny package, with the Python running the tests (no network)."""
    need_programs("asv", "git", reason="asv (pip install asv) and git make a results dir")
    results = tmp_path / "results"
    subprocess.run(["bash", str(MAKE), str(results)], check=True, timeout=300)
    _check_history(results, store)


def test_a_re_import_lists_each_machine_dir_once(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Thousands of runs per machine: one listing per machine and import, not one glob of
    the machine's dir per run (which made a 20,000-run re-import take minutes)."""
    assert main(["--store", str(store), "migrate", str(ASV_TINY)]) == 0
    machine_dir = store / "runs" / "by-machine" / "tiny-box"
    listings: list[str] = []
    real_iterdir, real_glob = Path.iterdir, Path.glob

    def iterdir(self: Path):  # a spy: counts, then lists for real
        listings.append(f"iterdir {self}")
        return real_iterdir(self)

    def glob(self: Path, pattern: str, *args, **kwargs):
        listings.append(f"glob {self} {pattern}")
        return real_glob(self, pattern, *args, **kwargs)

    monkeypatch.setattr(Path, "iterdir", iterdir)
    monkeypatch.setattr(Path, "glob", glob)
    assert main(["--store", str(store), "migrate", str(ASV_TINY)]) == 0
    on_machine = [line for line in listings if line.split(" ", 2)[1] == str(machine_dir)]
    assert on_machine == [f"iterdir {machine_dir}"]
    assert len(list(machine_dir.iterdir())) == COMMITS * len(SERIES)  # nothing new written
