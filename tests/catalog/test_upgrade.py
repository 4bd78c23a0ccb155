"""A v1 catalog, as an earlier release wrote it, still loads, merges and is rewritten: as the
sharded v3 by default, as v2 where BENCHLAB_CATALOG_FORMAT=v2 asks.

tests/data/catalog/v1-written-by-9ec6b77.json was written by benchlab at commit 9ec6b77
(`bench catalog build` over `make_fleet.py --runs 12 --seed 3`), not by this code.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.kit.catalog import catalog_doc

from benchlab.catalog.build import FORMAT_ENV, build
from benchlab.catalog.merge import merge_catalogs
from benchlab.catalog.read import load_catalog
from benchlab.catalog.validate import validate
from benchlab.identity import series_id
from benchlab.layout import Store

V1 = Path(__file__).parents[1] / "data" / "catalog" / "v1-written-by-9ec6b77.json"
Bench = Callable[..., tuple[int, str, str]]


def v1_doc() -> dict:
    return json.loads(V1.read_text())


def test_the_reader_upgrades_v1_on_load() -> None:
    loaded = load_catalog(V1)
    old = v1_doc()["runs"]
    assert len(loaded.runs) == len(old) == 12
    for before, after in zip(old, loaded.runs, strict=True):
        assert {k: after[k] for k in before} == before  # nothing dropped or changed
        assert after["series"] == series_id(after)
        assert after["precision_family"]


@pytest.mark.parametrize("version", ["2", "3"])
def test_a_build_rewrites_v1_and_keeps_every_entry(
    store: Path, monkeypatch: pytest.MonkeyPatch, version: str
) -> None:
    monkeypatch.setenv(FORMAT_ENV, f"v{version}")
    shutil.copyfile(V1, store / "catalog.json")
    result = build(Store(store))
    head = json.loads((store / "catalog.json").read_text())
    assert head["$schema"] == f"benchmark/catalog.v{version}"
    assert head["version"] == f"{version}.0" and ("runs" in head) == (version == "2")
    doc = catalog_doc(store / "catalog.json")
    assert result.total == 12 and result.kept == 12
    old = {e["run_id"]: e for e in v1_doc()["runs"]}
    new = {e["run_id"]: e for e in doc["runs"]}
    assert new.keys() == old.keys()
    for run_id, entry in old.items():
        assert {k: new[run_id][k] for k in entry} == entry
    assert validate(Store(store)).runs == 12


def test_v1_and_v2_clones_merge_through_the_driver(
    store: Path,
    make_fleet: Callable[..., list[str]],
    bench: Bench,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(FORMAT_ENV, "v2")
    make_fleet(store, 5, seed=11)
    build(Store(store))
    ours = tmp_path / "ours.json"
    theirs = tmp_path / "theirs.json"
    ours.write_bytes((store / "catalog.json").read_bytes())
    theirs.write_bytes(V1.read_bytes())
    code, _, err = bench("catalog", "merge-driver", str(ours), str(ours), str(theirs))
    assert code == 0, err
    merged = json.loads(ours.read_text())
    assert merged["$schema"] == "benchmark/catalog.v2"
    assert len(merged["runs"]) == 5 + 12
    assert all(e["series"] == series_id(e) for e in merged["runs"])


def test_v1_and_v3_clones_merge_through_the_driver(
    store: Path, make_fleet: Callable[..., list[str]], bench: Bench, tmp_path: Path
) -> None:
    """The v3 head keeps the v1 side's entries inline; the next build moves them to shards."""
    make_fleet(store, 5, seed=11)
    build(Store(store))
    ours, theirs = store / "catalog.json", tmp_path / "theirs.json"
    theirs.write_bytes(V1.read_bytes())
    code, _, err = bench("catalog", "merge-driver", str(ours), str(ours), str(theirs))
    assert code == 0, err
    assert json.loads(ours.read_text())["$schema"] == "benchmark/catalog.v3"
    merged = catalog_doc(ours)["runs"]
    assert len(merged) == 5 + 12 and all(e["series"] == series_id(e) for e in merged)
    assert validate(Store(store)).runs == 17
    build(Store(store))
    assert "runs" not in json.loads(ours.read_text())
    assert [e["run_id"] for e in catalog_doc(ours)["runs"]] == [e["run_id"] for e in merged]


def test_a_v1_copy_and_a_richer_v2_copy_of_a_run_are_a_conflict(store: Path) -> None:
    """The upgrade's derived fields (series, precision family) are no difference; a copy
    that says more of what was measured (threads) does not win by saying more: both are kept
    under `conflicts`, the same from either side, and neither counts as the run."""
    v1 = v1_doc()
    v2 = merge_catalogs(v1)  # the same runs, upgraded
    assert same_runs(merge_catalogs(v1, v2), v2)
    richer = dict(v2["runs"][0], threads=4)
    v2["runs"][0] = richer
    merged = [merge_catalogs(*sides) for sides in ((v1, v2), (v2, v1))]
    assert merged[0] == merged[1]
    [line] = merged[0]["conflicts"]
    assert line["run_id"] == richer["run_id"] and richer in line["conflict"]
    assert richer["run_id"] not in {e["run_id"] for e in merged[0]["runs"]}


def same_runs(a: dict, b: dict) -> bool:
    return a["runs"] == b["runs"] and "conflicts" not in a


def test_a_retracted_run_stays_gone_through_builds_and_merges(
    store: Path, make_fleet: Callable[..., list[str]], bench: Bench, tmp_path: Path
) -> None:
    make_fleet(store, 6, seed=2)
    build(Store(store))
    before = catalog_doc(store / "catalog.json")
    gone = before["runs"][2]["run_id"]
    code, out, _ = bench("--store", str(store), "catalog", "retract", gone)
    assert code == 0 and "1 entries removed" in out
    build(Store(store), full=True)  # its run dir is still here: still gone
    after = catalog_doc(store / "catalog.json")
    assert gone not in {e["run_id"] for e in after["runs"]} and after["retracted"] == [gone]
    theirs = tmp_path / "theirs.json"
    theirs.write_text(json.dumps(before))  # a clone that still has the run (inline in its head)
    ours = store / "catalog.json"
    assert bench("catalog", "merge-driver", str(ours), str(ours), str(theirs))[0] == 0
    merged = catalog_doc(ours)
    assert gone not in {e["run_id"] for e in merged["runs"]}
    assert len(merged["runs"]) == 5 and validate(Store(store)).runs == 5
