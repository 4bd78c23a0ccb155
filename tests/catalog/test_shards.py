"""Catalog v3: entries in shards. Adding a run touches one line of one shard; shards merge as
a union (properties, and a real two-clone `git merge` through the driver); retraction works
on shards. (Old catalogs and their upgrade: test_upgrade.py.)"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchlab.catalog.merge import head_document
from benchlab.catalog.merge_driver import merge_files
from benchlab.catalog.order import settle
from benchlab.catalog.read import load_catalog
from benchlab.catalog.shards import (
    encode_line,
    iter_shards,
    merge_shard_bytes,
    parse_lines,
    render_shard,
    shard_name,
)
from benchlab.catalog.text import render
from benchlab.cli import main
from benchlab.query.colcache import open_columns

STEP = 86400


def build(store: Path, *args: str) -> int:
    return main(["--store", str(store), "catalog", "build", *args])


def shard_files(store: Path) -> dict[str, bytes]:
    return {name: path.read_bytes() for name, path in iter_shards(store / "catalog.json")}


def test_one_new_run_is_one_line_of_one_shard(
    store: Path, make_fleet: Callable[..., list[str]]
) -> None:
    make_fleet(store, 30, seed=4, step_s=STEP)
    assert build(store) == 0
    head = (store / "catalog.json").read_bytes()
    before = shard_files(store)
    [run_id] = make_fleet(store, 1, seed=4, first=30, step_s=STEP)
    assert build(store) == 0
    after = shard_files(store)
    changed = [n for n in after if before.get(n) != after[n]]
    assert len(changed) == 1 and (store / "catalog.json").read_bytes() == head
    [name] = changed
    old_lines = set(before.get(name, b"").splitlines())
    new_lines = set(after[name].splitlines())
    assert old_lines <= new_lines and len(new_lines - old_lines) == 1
    [line] = new_lines - old_lines
    assert json.loads(line)["run_id"] == run_id
    assert build(store) == 0 and shard_files(store) == after  # quiet when nothing changed


def test_retract_removes_the_line_and_keeps_it_out(
    store: Path, make_fleet: Callable[..., list[str]]
) -> None:
    ids = make_fleet(store, 10, seed=7, step_s=STEP)
    assert build(store) == 0
    assert main(["--store", str(store), "catalog", "retract", ids[3]]) == 0
    assert build(store) == 0
    runs = load_catalog(store / "catalog.json").runs
    assert ids[3] not in {e["run_id"] for e in runs} and len(runs) == 9
    assert json.loads((store / "catalog.json").read_text())["retracted"] == [ids[3]]


# --- the shard merge --------------------------------------------------------------------

RUN_IDS = [f"m0-model-q8-batch-abcdef01-2025010{d}T12000{s}Z" for d in range(6, 9) for s in "01"]

entries = st.builds(
    lambda run_id, status, peak, curve: {
        "run_id": run_id,
        "machine_id": "m0",
        "timestamp": f"{run_id[-16:-12]}-{run_id[-12:-10]}-{run_id[-10:-8]}T12:00:00Z",
        "model": "M",
        "model_id": "m",
        "precision": "q8",
        "status": status,
        "tags": [],
        **({"peak_tok_per_sec": peak} if peak is not None else {}),
        **({"batch_curve": [{"agg_tok_per_sec": 1.5, "batch": 1}]} if curve else {}),
    },
    st.sampled_from(RUN_IDS),
    st.sampled_from(["ok", "failed"]),
    st.one_of(st.none(), st.floats(0, 1e4, allow_nan=False)),
    st.booleans(),
)
shards = st.lists(entries, max_size=6).map(
    lambda es: render_shard({e["run_id"]: e for e in es}.values())
)


@settings(max_examples=150, deadline=None)
@given(shards, shards, shards)
def test_shard_merge_is_commutative_associative_idempotent(a: bytes, b: bytes, c: bytes) -> None:
    assert merge_shard_bytes(a, b) == merge_shard_bytes(b, a)
    assert merge_shard_bytes(merge_shard_bytes(a, b), c) == merge_shard_bytes(
        a, merge_shard_bytes(b, c)
    )
    assert merge_shard_bytes(a, a) == a
    merged = merge_shard_bytes(a, b)
    assert merged == render_shard(parse_lines(merged, "m"))  # canonical


@given(entries)
def test_a_line_round_trips_and_the_curve_is_compact(entry: dict[str, Any]) -> None:
    line = encode_line(entry)
    assert parse_lines(line, "x") == [entry]
    if "batch_curve" in entry:
        assert b'"batch_curve":[[1,1.5]]' in line
    assert shard_name(entry).startswith("catalog/m0/2025-W0")


def test_the_driver_merges_a_head_holding_runs_inline(
    tmp_path: Path, store: Path, make_fleet: Callable[..., list[str]]
) -> None:
    make_fleet(store, 4, seed=8, step_s=STEP)
    assert build(store) == 0
    other = tmp_path / "other" / "store"
    make_fleet(other, 3, seed=9, step_s=STEP)
    assert build(other) == 0
    theirs = load_catalog(other / "catalog.json").runs
    inline = tmp_path / "inline.json"  # a head holding its runs inline, as a merge leaves it
    inline.write_text(render(head_document({}, (), theirs)))
    merge_files(store / "catalog.json", store / "catalog.json", inline)
    head = json.loads((store / "catalog.json").read_text())
    assert head["$schema"] == "benchmark/catalog.v3" and len(head["runs"]) == 3
    ids = {e["run_id"] for e in load_catalog(store / "catalog.json").runs}
    assert {e["run_id"] for e in theirs} <= ids and len(ids) == 7
    assert build(store) == 0
    assert "runs" not in json.loads((store / "catalog.json").read_text())
    assert len(load_catalog(store / "catalog.json").runs) == 7


# --- a real two-clone merge ---------------------------------------------------------------

STORE = Path("experiments") / "benchmark"


def git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=check, timeout=60
    )


@pytest.mark.integration
def test_two_clones_merge_their_shards_through_the_driver(
    tmp_path: Path, make_fleet: Callable[..., list[str]]
) -> None:
    work = tmp_path / "seed"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    (work / ".gitignore").write_text("experiments/benchmark/runs/\n")
    make_fleet(work / STORE, 2, seed=1, step_s=STEP)
    assert build(work / STORE) == 0
    assert main(["--store", str(work / STORE), "catalog", "install-merge-driver"]) == 0
    git(work, "add", ".gitignore", ".gitattributes", str(STORE))
    git(work, "commit", "-q", "-m", "seed")
    bare = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(work), str(bare))
    clones = []
    for name, first in (("alice", 2), ("bob", 3)):
        repo = tmp_path / name
        git(tmp_path, "clone", "-q", str(bare), str(repo))
        assert main(["--store", str(repo / STORE), "catalog", "install-merge-driver"]) == 0
        # Same machine, same week as the seed runs: both clones append to one shard.
        make_fleet(repo / STORE, 1, seed=1, first=first, step_s=STEP)
        assert build(repo / STORE) == 0
        git(repo, "add", str(STORE))
        git(repo, "commit", "-q", "-m", f"{name}: one more run")
        clones.append(repo)
    alice, bob = clones
    git(alice, "push", "-q", "origin", "main")
    git(bob, "fetch", "-q", "origin")
    merged = git(bob, "merge", "--no-edit", "origin/main", check=False)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert git(bob, "status", "--porcelain").stdout == ""
    assert len(load_catalog(bob / STORE / "catalog.json").runs) == 4
    assert main(["--store", str(bob / STORE), "catalog", "validate"]) == 0
    before = shard_files(bob / STORE)
    assert build(bob / STORE) == 0 and shard_files(bob / STORE) == before


# --- retraction keeps its shard; conflicts; one merge -------------------------------------


def test_retracting_the_only_run_of_a_shard_keeps_the_shard_empty(
    store: Path, make_fleet: Callable[..., list[str]]
) -> None:
    [run_id] = make_fleet(store, 1, seed=1, first=0, step_s=STEP)
    [other] = make_fleet(store, 1, seed=1, first=2, step_s=STEP)
    assert build(store) == 0
    name = "catalog/k8s-cpu-pod-1/2025-W02.k8s-cpu-pod-1.jsonl"
    assert main(["--store", str(store), "catalog", "retract", run_id]) == 0
    assert (store / name).read_bytes() == b""
    for args in ((), ("--full",)):
        assert build(store, *args) == 0
        assert (store / name).read_bytes() == b""
        assert [e["run_id"] for e in load_catalog(store / "catalog.json").runs] == [other]
        assert main(["--store", str(store), "catalog", "validate"]) == 0


def record_of(store: Path, run_id: str) -> Path:
    [path] = list((store / "runs" / "by-machine").glob(f"*/{run_id}/record.json"))
    return path


def test_this_clones_own_rebuilds_are_never_a_conflict(
    store: Path, make_fleet: Callable[..., list[str]]
) -> None:
    """A mark (tags, a warning) or a run dir measured again on this clone: the build of its
    own run dir replaces the copy it made before, in incremental and full builds."""
    [run_id] = make_fleet(store, 1, seed=1, first=3, step_s=STEP)
    assert build(store) == 0
    assert main(["--store", str(store), "mark-outlier", run_id, "--reason", "noisy"]) == 0
    assert build(store) == 0
    [entry] = load_catalog(store / "catalog.json").runs
    assert "outlier" in entry["tags"]
    path = record_of(store, run_id)
    record = json.loads(path.read_text())
    record["metrics"]["peak_tok_per_sec"] = 1234.5
    path.write_text(json.dumps(record))
    for args in ((), ("--full",)):
        assert build(store, *args) == 0
        [entry] = load_catalog(store / "catalog.json").runs
        assert entry["peak_tok_per_sec"] == 1234.5
        assert main(["--store", str(store), "catalog", "validate"]) == 0
    assert b'"conflict"' not in b"".join(shard_files(store).values())


def test_a_pulled_copy_in_another_week_is_a_conflict_no_reader_uses(
    store: Path,
    make_fleet: Callable[..., list[str]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Another clone's copy of run 3 says it ran a week later, with other numbers: it files
    in another shard, so no shard merge meets both. Readers leave the run out (and say so),
    validate reports it, and a full build of this clone's run dir keeps the other copy."""
    [run_id] = make_fleet(store, 1, seed=1, first=3, step_s=STEP)
    [other_run] = make_fleet(store, 1, seed=1, first=2, step_s=STEP)
    assert build(store) == 0
    [mine] = [e for e in load_catalog(store / "catalog.json").runs if e["run_id"] == run_id]
    theirs = {**mine, "timestamp": "2025-01-16T10:32:50Z", "peak_tok_per_sec": 1.0}
    name = shard_name(theirs)
    assert name != shard_name(mine)
    (store / name).write_bytes(render_shard([theirs]))  # as a pull would leave it
    capsys.readouterr()
    runs = load_catalog(store / "catalog.json").runs
    assert [e["run_id"] for e in runs] == [other_run]
    assert run_id in capsys.readouterr().err
    assert main(["--store", str(store), "catalog", "validate"]) == 1
    err = capsys.readouterr().err
    assert f"error: conflict: {run_id}: 2 copies" in err and "timestamp" in err
    assert main(["--store", str(store), "catalog", "build", "--full"]) == 0
    assert parse_lines((store / name).read_bytes(), name) == [theirs]
    assert main(["--store", str(store), "catalog", "validate"]) == 1
    # Wrong asks are one line each; retracting the run settles it (both copies go).
    capsys.readouterr()
    for bad in ((other_run, "1"), (run_id, "3")):
        assert main(["--store", str(store), "catalog", "resolve", bad[0], "--keep", bad[1]]) != 0
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert main(["--store", str(store), "catalog", "retract", run_id]) == 0
    assert main(["--store", str(store), "catalog", "validate"]) == 0
    assert [e["run_id"] for e in load_catalog(store / "catalog.json").runs] == [other_run]


def test_the_driver_writes_merge_shard_bytes(tmp_path: Path) -> None:
    """One shard merge: the driver's bytes are `merge_shard_bytes`' (conflicts included)."""
    entry = {
        "run_id": RUN_IDS[0],
        "machine_id": "m0",
        "timestamp": "2025-01-06T12:00:00Z",
        "model": "M",
        "precision": "q8",
        "peak_tok_per_sec": 1.0,
    }
    ours = render_shard([entry])
    theirs = render_shard([{**entry, "peak_tok_per_sec": 2.0}])
    name = "catalog/m0/2025-W02.m0.jsonl"
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_bytes(ours)
    b.write_bytes(theirs)
    assert merge_files(tmp_path / "o", a, b, name) == "shard"
    assert a.read_bytes() == merge_shard_bytes(ours, theirs)
    assert b'"conflict":[' in a.read_bytes()


def test_conflict_lines_a_head_brings_inline_are_read_as_conflicts(
    tmp_path: Path,
    store: Path,
    make_fleet: Callable[..., list[str]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    [run_id] = make_fleet(store, 1, seed=1, first=3, step_s=STEP)
    assert build(store) == 0
    [entry] = load_catalog(store / "catalog.json").runs
    other = tmp_path / "other.json"
    lines = {"conflicts": [settle([entry, dict(entry, peak_tok_per_sec=1.0)])]}
    other.write_text(render(head_document({}, (), lines["conflicts"])))
    merge_files(store / "catalog.json", store / "catalog.json", other)
    assert json.loads((store / "catalog.json").read_text())["conflicts"] == lines["conflicts"]
    capsys.readouterr()
    assert load_catalog(store / "catalog.json").runs == []
    assert run_id in capsys.readouterr().err
    assert open_columns(store / "catalog.json", min_bytes=0) is None  # the Python path answers
    assert main(["--store", str(store), "catalog", "validate"]) == 1
    assert build(store) == 0  # the conflict line moves into its shard
    assert "conflicts" not in json.loads((store / "catalog.json").read_text())
    assert load_catalog(store / "catalog.json").runs == []
    assert main(["--store", str(store), "catalog", "validate"]) == 1
