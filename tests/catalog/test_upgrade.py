"""An old single-file catalog is upgraded once (`bench catalog upgrade`, as `asv update`),
every run kept; after that every reader refuses an old catalog in one line naming the command.

tests/data/catalog/v1-written-by-9ec6b77.json was written by benchlab at commit 9ec6b77
(`bench catalog build` over `make_fleet.py --runs 12 --seed 3`), not by this code. The v2
catalog is that one as the v2 build wrote it (entries upgraded, `retracted`, `conflicts`).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.kit.catalog import catalog_doc

from benchlab.catalog.build import build
from benchlab.catalog.order import CONFLICT, settle
from benchlab.catalog.read import read_head
from benchlab.catalog.shards import iter_shards, read_shard
from benchlab.catalog.upgrade import CATALOG_V2, upgrade_entry
from benchlab.catalog.validate import validate
from benchlab.identity import series_id
from benchlab.layout import Store

V1 = Path(__file__).parents[1] / "data" / "catalog" / "v1-written-by-9ec6b77.json"
Bench = Callable[..., tuple[int, str, str]]


def v1_doc() -> dict[str, Any]:
    return json.loads(V1.read_text())


def v2_doc() -> dict[str, Any]:
    """The v1 runs as a v2 catalog: run 0 retracted, run 1 in conflict (two copies that
    measure differently), the rest plain entries."""
    runs = [upgrade_entry(e) for e in v1_doc()["runs"]]
    gone, torn = runs[0], runs[1]
    other = dict(torn, peak_tok_per_sec=(torn.get("peak_tok_per_sec") or 1.0) + 7.0)
    return {
        "$schema": CATALOG_V2,
        "version": "2.0",
        "machines": {},
        "runs": runs[2:],
        "conflicts": [settle([torn, other])],
        "retracted": [gone["run_id"]],
    }


def shard_lines(store: Path) -> dict[str, dict[str, Any]]:
    return {
        e["run_id"]: e for _, path in iter_shards(store / "catalog.json") for e in read_shard(path)
    }


def test_upgrade_rewrites_a_v1_catalog_keeping_every_run(store: Path, bench: Bench) -> None:
    shutil.copyfile(V1, store / "catalog.json")
    code, out, err = bench("--store", str(store), "catalog", "upgrade")
    assert code == 0, err
    assert "upgraded v1 to v3: 12 runs, 0 conflicts kept" in out
    head = json.loads((store / "catalog.json").read_text())
    assert head["$schema"] == "benchmark/catalog.v3" and "runs" not in head
    old = {e["run_id"]: e for e in v1_doc()["runs"]}
    new = {e["run_id"]: e for e in catalog_doc(store / "catalog.json")["runs"]}
    assert new.keys() == old.keys()
    for run_id, entry in old.items():
        assert {k: new[run_id][k] for k in entry} == entry  # nothing dropped or changed
        assert new[run_id]["series"] == series_id(new[run_id])
    assert validate(Store(store)).runs == 12
    before = (store / "catalog.json").read_bytes()
    code, out, _ = bench("--store", str(store), "catalog", "upgrade")
    assert code == 0 and "already v3" in out
    assert (store / "catalog.json").read_bytes() == before
    assert build(Store(store)).total == 12  # and the build takes it from here


def test_upgrade_keeps_a_v2_conflict_and_its_retractions(store: Path, bench: Bench) -> None:
    doc = v2_doc()
    (store / "catalog.json").write_text(json.dumps(doc))
    code, out, err = bench("--store", str(store), "catalog", "upgrade")
    assert code == 0, err
    assert "upgraded v2 to v3: 10 runs, 1 conflicts kept" in out
    lines = shard_lines(store)
    [conflict] = doc["conflicts"]
    assert lines[conflict["run_id"]] == conflict and CONFLICT in lines[conflict["run_id"]]
    assert {e["run_id"]: e for e in doc["runs"]}.items() <= lines.items()
    assert doc["retracted"][0] not in lines
    assert read_head(store / "catalog.json")["retracted"] == doc["retracted"]
    report = validate(Store(store))
    assert report.runs == 10 and len(report.conflicts) == 1


def test_upgrade_unites_with_shards_already_there(store: Path, bench: Bench) -> None:
    """A shard left by a v3 checkout is merged with the upgraded lines, never overwritten."""
    doc = v2_doc()
    (store / "catalog.json").write_text(json.dumps(doc))
    assert bench("--store", str(store), "catalog", "upgrade")[0] == 0
    lines = shard_lines(store)
    keep = {name: path.read_bytes() for name, path in iter_shards(store / "catalog.json")}
    (store / "catalog.json").write_text(json.dumps(dict(doc, runs=doc["runs"][:3])))
    assert bench("--store", str(store), "catalog", "upgrade")[0] == 0
    assert shard_lines(store) == lines
    assert {n: p.read_bytes() for n, p in iter_shards(store / "catalog.json")} == keep


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_build_and_validate_refuse_an_old_catalog_in_one_line(
    store: Path, bench: Bench, version: str
) -> None:
    path = store / "catalog.json"
    path.write_text(json.dumps(v1_doc() if version == "v1" else v2_doc()))
    before = path.read_bytes()
    message = f"{path} is catalog {version}: run `bench catalog upgrade`"
    for argv in (("catalog", "build"), ("catalog", "validate")):
        code, out, err = bench("--store", str(store), *argv)
        assert code != 0 and out == "", argv
        assert err.strip().splitlines() == [f"bench: error: {message}"], argv
    assert path.read_bytes() == before and not (store / "catalog").exists()


@pytest.mark.parametrize("side", ["ours", "theirs"])
def test_the_merge_driver_refuses_a_v2_side(
    store: Path,
    make_fleet: Callable[..., list[str]],
    bench: Bench,
    tmp_path: Path,
    side: str,
) -> None:
    """Exit non-zero, so git reports a conflict; ours is left as it was."""
    make_fleet(store, 5, seed=11)
    build(Store(store))
    v3 = (store / "catalog.json").read_bytes()
    ours, theirs = tmp_path / "ours.json", tmp_path / "theirs.json"
    old = json.dumps(v2_doc()).encode()
    ours.write_bytes(old if side == "ours" else v3)
    theirs.write_bytes(v3 if side == "ours" else old)
    before = ours.read_bytes()
    code, _, err = bench("catalog", "merge-driver", str(ours), str(ours), str(theirs), "c.json")
    assert code != 0
    assert err.strip().splitlines() == [
        f"bench: error: c.json ({side}) is catalog v2: run `bench catalog upgrade`"
    ]
    assert ours.read_bytes() == before


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
