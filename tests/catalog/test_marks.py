"""Outlier marks in the catalog head (ARCHITECTURE.md, The catalog: marks and verdicts):
any run of the catalog can be marked (an imported run, another clone's run), the mark
survives builds, every reader presents it as `stats.is_outlier`, a hostile mark in the head
is refused by the gate with file and field, and the merge keeps the newest record per run.
Real stores written by the synthetic fleet generator, the real CLI."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from tests.kit.catalog import catalog_doc

from benchlab.catalog.gate import head_problem
from benchlab.catalog.marking import write_mark
from benchlab.catalog.marks import REASON_FIELD, merge_marks
from benchlab.catalog.merge import merge_heads
from benchlab.catalog.read import load_catalog
from benchlab.detect.stats import OUTLIER_TAG, is_outlier
from benchlab.layout import RECORD, Store

Bench = Callable[..., tuple[int, str, str]]


@pytest.fixture
def fleet(store: Path, make_fleet: Callable[..., list[str]], bench: Bench) -> dict[str, str]:
    """A built catalog of 8 runs; returns run ids by kind: `imported` (no record.json),
    `foreign` (its run dir removed after the build: another clone's run), `local` (ok, with
    a record)."""
    ids = make_fleet(store, 8, seed=3, step_s=3600)
    layout = Store(store)
    dirs = {p.name: p for p in layout.by_machine.glob("*/*") if p.is_dir()}
    with_record = [i for i in ids if (dirs[i] / RECORD).is_file()]
    ok = [i for i in with_record if json.loads((dirs[i] / RECORD).read_text())["status"] == "ok"]
    imported, foreign, local = ok[:3]
    (dirs[imported] / RECORD).unlink()  # as `bench migrate` writes an import: no record
    assert bench("--store", str(store), "catalog", "build")[0] == 0
    shutil.rmtree(dirs[foreign])
    return {"imported": imported, "foreign": foreign, "local": local}


def entries(store: Path) -> dict[str, dict]:  # type: ignore[type-arg]
    return {e["run_id"]: e for e in catalog_doc(store / "catalog.json")["runs"]}


def test_any_run_of_the_catalog_can_be_marked_and_the_mark_survives_builds(
    store: Path, fleet: dict[str, str], bench: Bench
) -> None:
    s = ("--store", str(store))
    for kind in ("imported", "foreign", "local"):
        code, out, err = bench(*s, "mark-outlier", fleet[kind], "--reason", "thermal throttling")
        assert code == 0, err
        assert f"{fleet[kind]} marked as an outlier (catalog.json at " in out
    head = orjson.loads((store / "catalog.json").read_bytes())
    assert [m["run_id"] for m in head["marks"]] == sorted(fleet.values())
    assert all(
        m["state"] == "marked" and m["reason"] == "thermal throttling" for m in head["marks"]
    )
    record = json.loads(
        next(Store(store).by_machine.glob(f"*/{fleet['local']}/{RECORD}")).read_text()
    )
    assert OUTLIER_TAG in record["tags"]  # the local run's record is tagged too

    for _ in range(2):  # a build (and a second one, with its cache) keeps every mark
        assert bench(*s, "catalog", "build")[0] == 0
        found = entries(store)
        for run_id in fleet.values():
            assert is_outlier(found[run_id]) and found[run_id][REASON_FIELD] == "thermal throttling"
    unmarked = [e for r, e in found.items() if r not in fleet.values()]
    assert unmarked and not any(is_outlier(e) for e in unmarked)

    assert bench(*s, "mark-outlier", fleet["foreign"], "--clear")[0] == 0
    assert bench(*s, "mark-outlier", fleet["local"], "--clear")[0] == 0
    assert bench(*s, "catalog", "build")[0] == 0
    found = entries(store)
    assert not is_outlier(found[fleet["foreign"]]) and not is_outlier(found[fleet["local"]])
    assert REASON_FIELD not in found[fleet["local"]]
    assert is_outlier(found[fleet["imported"]])


def test_a_clear_beats_the_records_own_tag(
    store: Path, fleet: dict[str, str], bench: Bench
) -> None:
    """Another clone's newer clear wins over the tag this clone's record still carries."""
    s = ("--store", str(store))
    assert bench(*s, "mark-outlier", fleet["local"])[0] == 0
    assert bench(*s, "catalog", "build")[0] == 0
    line = next((store / "catalog").rglob("*.jsonl")).parent  # the shards hold the record's tag
    assert any(
        OUTLIER_TAG in json.loads(raw).get("tags", [])
        for shard in line.parent.rglob("*.jsonl")
        for raw in shard.read_text().splitlines()
        if fleet["local"] in raw
    )
    write_mark(Store(store), fleet["local"], clear=True)  # a later clear
    assert not is_outlier(entries(store)[fleet["local"]])


def test_unknown_ids_and_public_reasons_are_refused_and_nothing_is_written(
    store: Path, fleet: dict[str, str], bench: Bench
) -> None:
    s = ("--store", str(store))
    before = (store / "catalog.json").read_bytes()
    typo = fleet["imported"][:-3] + "9Z9"
    code, out, err = bench(*s, "mark-outlier", typo)
    assert code == 1 and out == "" and len(err.strip().splitlines()) == 1
    assert f"no run {typo!r} in the catalog; did you mean {fleet['imported']}?" in err
    for reason, field in (
        ("slow on ip-10-1-2-3.ec2.internal", "redaction policy"),
        ("x" * 161, "161 characters"),
        ("bidi \u202e text", "U+202E"),
    ):
        code, out, err = bench(*s, "mark-outlier", fleet["imported"], "--reason", reason)
        assert code == 2 and out == "" and err.count("\n") == 1, err
        assert "--reason" in err and field in err and "Traceback" not in err
    code, _, err = bench(*s, "mark-outlier", "../../etc")
    assert code == 2 and "run id" in err
    assert (store / "catalog.json").read_bytes() == before


@pytest.mark.parametrize(
    ("mark", "field"),
    [
        ({"run_id": "../../x", "state": "marked", "at": "2026-01-01T00:00:00Z"}, "run_id"),
        ({"run_id": "a-b", "state": "gone", "at": "2026-01-01T00:00:00Z"}, "state"),
        ({"run_id": "a-b", "state": "marked", "at": "yesterday"}, "at"),
        (
            {"run_id": "a-b", "state": "marked", "at": "2026-01-01T00:00:00Z", "reason": "\x1b[2J"},
            "reason",
        ),
        (
            {"run_id": "a-b", "state": "marked", "at": "2026-01-01T00:00:00Z", "reason": "y" * 400},
            "reason",
        ),
        ({"run_id": "a-b", "state": "marked", "at": "2026-01-01T00:00:00Z", "by": "me"}, "'by'"),
        ({"run_id": "a-b", "state": "marked"}, "at"),
    ],
)
def test_a_hostile_mark_in_a_pulled_head_is_refused_with_file_and_field(
    store: Path,
    fleet: dict[str, str],
    bench: Bench,
    mark: dict,
    field: str,  # type: ignore[type-arg]
) -> None:
    head_path = store / "catalog.json"
    head = orjson.loads(head_path.read_bytes())
    head["marks"] = [mark]
    head_path.write_bytes(orjson.dumps(head))
    before = head_path.read_bytes()
    assert head_problem(head) is not None
    for verb in (("catalog", "validate"), ("best",)):
        code, out, err = bench("--store", str(store), *verb)
        assert code == 2, (verb, out, err)
        assert "catalog.json: $.marks[0]" in err and field in err and "Traceback" not in err
        assert "bench catalog build" in err  # the fix, named
    with pytest.raises(Exception, match=r"\$\.marks\[0\]"):
        load_catalog(head_path)
    assert head_path.read_bytes() == before  # refused by readers, never rewritten by them
    # The build leaves the refused mark out of the head it writes and names it (exit 0).
    code, out, err = bench("--store", str(store), "catalog", "build")
    assert code == 0 and "$.marks[0]" in err and field in err and "Traceback" not in err
    assert "marks" not in orjson.loads(head_path.read_bytes())


def test_marks_merge_newest_wins_whatever_the_order() -> None:
    a = {"run_id": "r-1", "state": "marked", "at": "2026-01-01T00:00:00Z", "reason": "hot"}
    b = {"run_id": "r-1", "state": "cleared", "at": "2026-01-02T00:00:00Z"}
    c = {"run_id": "r-2", "state": "marked", "at": "2026-01-01T00:00:00Z"}
    tie = {"run_id": "r-2", "state": "cleared", "at": "2026-01-01T00:00:00Z"}
    sides = [[a, c], [b], [tie], [a, b, c, tie]]
    import itertools

    results = {
        json.dumps(merge_marks(*order), sort_keys=True) for order in itertools.permutations(sides)
    }
    assert len(results) == 1  # commutative (and associative: the last side holds them all)
    winner = merge_marks(*sides)
    assert winner["r-1"] == b and winner["r-2"] == max(
        c, tie, key=lambda m: orjson.dumps(m, option=orjson.OPT_SORT_KEYS)
    )
    head = {"$schema": "benchmark/catalog.v3", "machines": {}}
    merged = merge_heads({**head, "marks": [a]}, {**head, "marks": [b], "retracted": ["r-9"]})
    assert merged["marks"] == [b]
    assert merge_heads(merged, merged) == merged  # idempotent
    gone = merge_heads({**head, "marks": [c]}, {**head, "retracted": ["r-2"]})
    assert "marks" not in gone  # a retracted run's mark goes with it


def test_a_mark_made_here_wins_over_one_in_the_same_second(
    store: Path, fleet: dict[str, str]
) -> None:
    layout = Store(store)
    first = write_mark(layout, fleet["imported"], reason="hot", at="2026-05-05T10:00:00Z")
    second = write_mark(layout, fleet["imported"], clear=True, at="2026-05-05T10:00:00Z")
    assert second["at"] == "2026-05-05T10:00:01Z" and first["state"] == "marked"
    assert not is_outlier(entries(store)[fleet["imported"]])


def test_a_reason_is_redacted_when_it_reaches_a_head_from_git(
    store: Path, fleet: dict[str, str]
) -> None:
    """A pulled mark whose reason passes the gate's shape but names a host is scrubbed by the
    next write of the head (the redaction policy of public text)."""
    head_path = store / "catalog.json"
    head = orjson.loads(head_path.read_bytes())
    head["marks"] = [
        {
            "run_id": fleet["foreign"],
            "state": "marked",
            "at": "2026-01-01T00:00:00Z",
            "reason": "noisy on ip-10-1-2-3.ec2.internal",
        }
    ]
    head_path.write_bytes(orjson.dumps(head))
    write_mark(Store(store), fleet["imported"], at="2026-01-02T00:00:00Z")
    [pulled] = [
        m for m in orjson.loads(head_path.read_bytes())["marks"] if m["run_id"] == fleet["foreign"]
    ]
    assert "ip-10-1-2-3" not in pulled["reason"] and pulled["reason"].startswith("noisy on ")


# --- two real git clones ------------------------------------------------------------------

from tests.catalog.test_git_merge import (  # noqa: E402  (the merge tests' real-git kit)
    STORE,
    clone_and_build,
    git,
    origin,  # noqa: F401  (a fixture)
    public_bytes,
)


@pytest.mark.integration
def test_marks_merge_between_two_git_clones_in_both_directions(
    origin: Path,  # noqa: F811
    make_fleet: Callable[..., list[str]],
    bench: Bench,
) -> None:
    alice, run_a = clone_and_build(origin, "alice", 2, make_fleet, driver=True)
    bob, run_b = clone_and_build(origin, "bob", 3, make_fleet, driver=True)
    seed = sorted(entries(alice / STORE))
    seed = [r for r in seed if r not in (run_a, run_b)]  # the origin's runs: no dir in either
    assert len(seed) == 2
    code, _, err = bench("--store", str(alice / STORE), "mark-outlier", seed[0], "--reason", "hot")
    assert code == 0, err
    write_mark(Store(alice / STORE), seed[1], reason="noisy", at="2026-03-01T00:00:00Z")
    write_mark(Store(alice / STORE), run_a, at="2026-03-01T00:00:00Z")
    write_mark(Store(bob / STORE), seed[1], clear=True, at="2026-03-02T00:00:00Z")  # newer
    write_mark(Store(bob / STORE), run_b, reason="fan stuck", at="2026-03-01T00:00:00Z")
    for repo in (alice, bob):
        git(repo, "commit", "-q", "-am", "marks")

    git(alice, "push", "-q", "origin", "main")
    git(bob, "fetch", "-q", "origin")
    merged = git(bob, "merge", "--no-edit", "origin/main", check=False)
    assert merged.returncode == 0 and "CONFLICT" not in merged.stdout, merged.stdout
    found = entries(bob / STORE)
    assert is_outlier(found[seed[0]]) and found[seed[0]][REASON_FIELD] == "hot"
    assert not is_outlier(found[seed[1]])  # bob's clear is newer than alice's mark
    assert is_outlier(found[run_a]) and is_outlier(found[run_b])
    before = public_bytes(bob)
    assert bench("--store", str(bob / STORE), "catalog", "build")[0] == 0
    assert public_bytes(bob) == before  # the merge wrote what a build writes

    git(bob, "push", "-q", "origin", "main")  # and the other way round: the same bytes
    git(alice, "pull", "-q", "--no-rebase", "origin", "main")
    assert public_bytes(alice) == before
    found = entries(alice / STORE)
    assert is_outlier(found[run_b]) and found[run_b][REASON_FIELD] == "fan stuck"
    assert not is_outlier(found[seed[1]])


def test_the_columnar_cache_and_the_sites_data_present_marks(
    store: Path, fleet: dict[str, str], bench: Bench
) -> None:
    """The columns cache is keyed by the head's stat, so a mark refreshes it; its tags column,
    its full entries and the site's light entries all say `outlier` for the marked run."""
    from benchlab.publish.data import load_site
    from benchlab.query.colcache import open_columns

    def outliers() -> tuple[set[str], set[str], int]:
        site = load_site(Store(store), min_bytes=0)
        light = {e["run_id"] for e in site.catalog.runs if is_outlier(e)}
        columns = open_columns(Store(store), min_bytes=0)
        assert columns is not None
        full = {e["run_id"] for e in columns.entries(range(columns.n)) if is_outlier(e)}
        return light, full, int(columns._unmarked().sum())

    light, full, unmarked = outliers()
    assert light == full == set()
    assert bench("--store", str(store), "mark-outlier", fleet["foreign"], "--reason", "hot")[0] == 0
    light, full, after = outliers()
    assert light == full == {fleet["foreign"]} and after == unmarked - 1
    assert bench("--store", str(store), "mark-outlier", fleet["foreign"], "--clear")[0] == 0
    assert outliers() == (set(), set(), unmarked)
