"""Two clones build different runs into the same catalog shard; `git merge` with the installed
driver merges them with no conflict. Real git repos, real `git clone`, real merge driver
process. (Runs 2 and 3 of the seed-1 fleet are one machine's runs in one ISO week, so both
clones create the same shard: without the driver that is an add/add conflict.)"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.kit.catalog import catalog_doc

from benchlab.catalog import build as build_module
from benchlab.catalog.views import view_names
from benchlab.cli import main

pytestmark = pytest.mark.integration

STORE = Path("experiments") / "benchmark"
STEP = 86400


def git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=check, timeout=60
    )


def bench(repo: Path, *args: str) -> int:
    return main(["--store", str(repo / STORE), *args])


@pytest.fixture
def origin(tmp_path: Path, make_fleet: Callable[..., list[str]]) -> Path:
    """A bare origin whose main branch holds a catalog of two runs and the driver wiring."""
    work = tmp_path / "seed"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    (work / ".gitignore").write_text("experiments/benchmark/runs/\n")
    make_fleet(work / STORE, 2, seed=1, step_s=STEP)
    assert bench(work, "catalog", "build") == 0
    assert bench(work, "catalog", "install-merge-driver") == 0
    git(work, "add", ".gitignore", ".gitattributes", str(STORE))
    git(work, "commit", "-q", "-m", "catalog of two runs")
    bare = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(work), str(bare))
    return bare


def clone_and_build(
    origin: Path, name: str, index: int, make_fleet: Callable[..., list[str]], *, driver: bool
) -> tuple[Path, str]:
    repo = origin.parent / name
    git(origin.parent, "clone", "-q", str(origin), str(repo))
    if driver:
        assert bench(repo, "catalog", "install-merge-driver") == 0
    [run_id] = make_fleet(repo / STORE, 1, seed=1, first=index, step_s=STEP)
    assert bench(repo, "catalog", "build") == 0
    git(repo, "add", str(STORE / "catalog.json"), str(STORE / "catalog"), str(STORE / "machines"))
    git(repo, "commit", "-q", "-m", f"{name}: one more run")
    return repo, run_id


def run_ids(repo: Path) -> list[str]:
    return [entry["run_id"] for entry in catalog_doc(repo / STORE / "catalog.json")["runs"]]


def public_bytes(repo: Path) -> dict[str, bytes]:
    """The tracked catalog: its head and every shard."""
    root = repo / STORE
    files = [root / "catalog.json", *sorted((root / "catalog").rglob("*.jsonl"))]
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in files}


def test_two_clones_merge_without_conflict(
    origin: Path, make_fleet: Callable[..., list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    alice, run_a = clone_and_build(origin, "alice", 2, make_fleet, driver=True)
    bob, run_b = clone_and_build(origin, "bob", 3, make_fleet, driver=True)
    git(alice, "push", "-q", "origin", "main")
    git(bob, "fetch", "-q", "origin")
    merged = git(bob, "merge", "--no-edit", "origin/main", check=False)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert "CONFLICT" not in merged.stdout
    ids = run_ids(bob)
    assert run_a in ids and run_b in ids and len(ids) == 4
    assert git(bob, "status", "--porcelain").stdout == ""
    # The merged catalog is exactly what a build of the union would write, and it validates
    # (run dirs built elsewhere are absent here: warnings, not failures).
    capsys.readouterr()
    assert bench(bob, "catalog", "validate") == 0
    out, err = capsys.readouterr()
    assert "4 runs valid, 3 run dirs absent here" in out  # seed runs + alice
    assert f"warning: {run_a}: run dir absent on this clone" in err
    before = public_bytes(bob)
    assert bench(bob, "catalog", "build") == 0
    assert public_bytes(bob) == before
    # And the other way round gives the same bytes.
    git(bob, "push", "-q", "origin", "main")
    git(alice, "pull", "-q", "--no-rebase", "origin", "main")
    assert public_bytes(alice) == before


def test_without_the_driver_the_same_merge_conflicts(
    origin: Path, make_fleet: Callable[..., list[str]]
) -> None:
    alice, _ = clone_and_build(origin, "alice", 2, make_fleet, driver=False)
    bob, _ = clone_and_build(origin, "bob", 3, make_fleet, driver=False)
    git(alice, "push", "-q", "origin", "main")
    git(bob, "fetch", "-q", "origin")
    merged = git(bob, "merge", "--no-edit", "origin/main", check=False)
    assert merged.returncode != 0
    assert "CONFLICT" in merged.stdout


def test_a_malformed_side_is_reported_as_a_conflict(
    origin: Path, make_fleet: Callable[..., list[str]]
) -> None:
    alice, _ = clone_and_build(origin, "alice", 2, make_fleet, driver=True)
    bob, _ = clone_and_build(origin, "bob", 3, make_fleet, driver=True)
    (alice / STORE / "catalog.json").write_text('{"$schema": "benchmark/catalog.v3", "runs": 3}\n')
    git(alice, "commit", "-q", "-am", "broken catalog")
    git(alice, "push", "-q", "origin", "main")
    git(bob, "fetch", "-q", "origin")
    merged = git(bob, "merge", "--no-edit", "origin/main", check=False)
    assert merged.returncode != 0
    assert "CONFLICT" in merged.stdout
    assert "experiments/benchmark/catalog.json (theirs): $.runs: " in merged.stderr


def test_install_is_idempotent_and_keeps_other_attributes(origin: Path) -> None:
    repo = origin.parent / "carol"
    git(origin.parent, "clone", "-q", str(origin), str(repo))
    attributes = repo / ".gitattributes"
    attributes.write_text("*.png binary\n" + attributes.read_text())
    assert bench(repo, "catalog", "install-merge-driver") == 0
    once = attributes.read_text()
    assert bench(repo, "catalog", "install-merge-driver") == 0
    assert attributes.read_text() == once
    assert once.splitlines() == [
        "*.png binary",
        "experiments/benchmark/catalog.json merge=benchlab-catalog",
        "experiments/benchmark/machines/catalog.json merge=benchlab-catalog",
        "experiments/benchmark/catalog/**/*.jsonl merge=benchlab-catalog",
    ]
    driver = git(repo, "config", "merge.benchlab-catalog.driver").stdout.strip()
    assert driver.endswith("-m benchlab catalog merge-driver %O %A %B %P")
    assert git(repo, "config", "merge.benchlab-catalog.name").stdout.strip()


# --- retraction beside an addition, and conflicts, through real clones -------------------------


def seed_origin(tmp_path: Path, make_fleet: Callable[..., list[str]], indices: list[int]) -> Path:
    """A bare origin holding the v3 catalog of the seed-1 fleet's runs at `indices`."""
    work = tmp_path / "seed"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    (work / ".gitignore").write_text("experiments/benchmark/runs/\n")
    for index in indices:
        make_fleet(work / STORE, 1, seed=1, first=index, step_s=STEP)
    assert bench(work, "catalog", "build") == 0
    assert bench(work, "catalog", "install-merge-driver") == 0
    git(work, "add", ".gitignore", ".gitattributes", str(STORE))
    git(work, "commit", "-q", "-m", "seed")
    bare = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(work), str(bare))
    return bare


def clone(origin: Path, name: str) -> Path:
    repo = origin.parent / name
    git(origin.parent, "clone", "-q", str(origin), str(repo))
    git(repo, "config", "user.name", name)
    git(repo, "config", "user.email", f"{name}@example.invalid")
    assert bench(repo, "catalog", "install-merge-driver") == 0
    return repo


def commit(repo: Path, message: str) -> None:
    git(repo, "add", "--all", str(STORE))
    git(repo, "commit", "-q", "-m", message)


def merge_both_ways(a: Path, b: Path) -> None:
    """Each clone fetches the other's commit first, then merges it: both directions from
    the same two commits. Neither merge may conflict or leave the tree dirty."""
    git(a, "fetch", "-q", str(b), "main:refs/remotes/other/main")
    git(b, "fetch", "-q", str(a), "main:refs/remotes/other/main")
    for repo in (a, b):
        merged = git(repo, "merge", "--no-edit", "other/main", check=False)
        assert merged.returncode == 0, merged.stdout + merged.stderr
        assert "CONFLICT" not in merged.stdout
        assert git(repo, "status", "--porcelain").stdout == ""


def shard_lines(repo: Path, name: str) -> list[dict]:
    text = (repo / STORE / name).read_text()
    return [json.loads(line) for line in text.splitlines() if line]


def test_a_retraction_beside_an_addition_to_the_same_shard_keeps_the_addition(
    tmp_path: Path, make_fleet: Callable[..., list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    """Clone A retracts the only run of a shard while clone B adds a run to that shard (runs
    0, 1 and 5 of the seed-1 fleet are one machine's, one ISO week). A deleted shard would be
    a modify/delete conflict git settles without the driver; a kept, empty one merges."""
    origin = seed_origin(tmp_path, make_fleet, [0, 2])
    alice, bob = clone(origin, "alice"), clone(origin, "bob")
    [retracted] = [r for r in run_ids(alice) if r.startswith("k8s-cpu-pod-1-")]
    name = "catalog/k8s-cpu-pod-1/2025-W02.k8s-cpu-pod-1.jsonl"
    assert bench(alice, "catalog", "retract", retracted) == 0
    assert (alice / STORE / name).read_bytes() == b""  # kept, empty
    commit(alice, "retract the only run of a shard")
    [added] = make_fleet(bob / STORE, 1, seed=1, first=1, step_s=STEP)
    assert bench(bob, "catalog", "build") == 0
    assert len(shard_lines(bob, name)) == 2
    commit(bob, "one more run in the same shard")

    merge_both_ways(alice, bob)
    for repo in (alice, bob):
        ids = run_ids(repo)
        assert added in ids and retracted not in ids and len(ids) == 2
        capsys.readouterr()
        assert bench(repo, "catalog", "validate") == 0
        assert bench(repo, "catalog", "build") == 0  # the retracted line leaves the shard
        assert [e["run_id"] for e in shard_lines(repo, name)] == [added]
    assert public_bytes(alice) == public_bytes(bob)


def test_an_empty_shard_is_read_validated_and_built(
    tmp_path: Path, make_fleet: Callable[..., list[str]]
) -> None:
    origin = seed_origin(tmp_path, make_fleet, [0, 2])
    repo = clone(origin, "carol")
    [run_id] = [r for r in run_ids(repo) if r.startswith("k8s-cpu-pod-1-")]
    assert bench(repo, "catalog", "retract", run_id) == 0
    assert bench(repo, "catalog", "validate") == 0
    assert bench(repo, "catalog", "build", "--full") == 0
    assert (repo / STORE / "catalog/k8s-cpu-pod-1/2025-W02.k8s-cpu-pod-1.jsonl").exists()
    assert len(run_ids(repo)) == 1
    assert bench(repo, "best") in (0, 1)  # a query over an empty shard answers


def tamper(repo: Path, run_id: str) -> dict:
    """Clone B's copy of a run measures differently: a higher peak, one extra measured key
    and a newer timestamp (same ISO week) — each of which used to win the old winner rule.
    Written into the tracked shard, as another build or a hand edit would leave it."""
    from benchlab.catalog.shards import parse_lines, render_shard, shard_name

    store = repo / STORE
    [(name, path)] = [
        (n, p)
        for n, p in ((p.relative_to(store).as_posix(), p) for p in store.rglob("*.jsonl"))
        if run_id.encode() in p.read_bytes()
    ]
    entries = parse_lines(path.read_bytes(), name)
    [entry] = [e for e in entries if e["run_id"] == run_id]
    entry["peak_tok_per_sec"] = round(entry["peak_tok_per_sec"] * 1.5, 2)
    entry["n_batch"] = 2048
    entry["timestamp"] = entry["timestamp"].replace("T10:", "T11:")
    assert shard_name(entry) == name
    path.write_bytes(render_shard(entries))
    return entry


def test_two_clones_measuring_one_run_differently_is_a_kept_reported_conflict(
    tmp_path: Path,
    make_fleet: Callable[..., list[str]],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    origin = seed_origin(tmp_path, make_fleet, [0, 2])
    alice, bob = clone(origin, "alice"), clone(origin, "bob")
    for repo in (alice, bob):
        [shared] = make_fleet(repo / STORE, 1, seed=1, first=3, step_s=STEP)
        assert bench(repo, "catalog", "build") == 0
    ours = next(e for e in load_runs(alice) if e["run_id"] == shared)
    theirs = tamper(bob, shared)
    commit(alice, "run 3")
    commit(bob, "run 3, measured again")

    merge_both_ways(alice, bob)
    assert public_bytes(alice) == public_bytes(bob)
    name = "catalog/anthony-laptop/2025-W02.anthony-laptop.jsonl"
    [line] = [e for e in shard_lines(alice, name) if e["run_id"] == shared]
    assert sorted(c["peak_tok_per_sec"] for c in line["conflict"]) == sorted(
        [ours["peak_tok_per_sec"], theirs["peak_tok_per_sec"]]
    )
    capsys.readouterr()
    assert bench(alice, "catalog", "validate") == 1
    err = capsys.readouterr().err
    [report] = [r for r in err.splitlines() if r.startswith("error: conflict:")]
    assert shared in report and "peak_tok_per_sec" in report and "n_batch" in report
    assert "timestamp" in report and str(theirs["peak_tok_per_sec"]) in report
    assert f"bench catalog resolve {shared} --keep N" in report
    # Queries use neither copy: the run is left out, with a warning.
    assert shared not in run_ids(alice)
    assert bench(alice, "list") in (0, 1)
    assert shared in capsys.readouterr().err
    # A build of alice's own (unchanged) run dir keeps bob's copy beside it, and no view
    # of the run (neither copy is the truth).
    assert bench(alice, "catalog", "build", "--full") == 0
    assert [e for e in shard_lines(alice, name) if e["run_id"] == shared] == [line]
    assert not list((alice / STORE / "runs").glob(f"by-*/*/*{shared}.json"))

    # Resolved on one clone, the choice travels: bob's copy is kept on both.
    keep = 1 + [c["peak_tok_per_sec"] for c in line["conflict"]].index(theirs["peak_tok_per_sec"])
    assert bench(alice, "catalog", "resolve", shared, "--keep", str(keep)) == 0
    commit(alice, "resolve")
    git(bob, "pull", "-q", "--no-rebase", str(alice), "main")
    for repo in (alice, bob):
        assert bench(repo, "catalog", "validate") == 0
        [kept] = [e for e in load_runs(repo) if e["run_id"] == shared]
        assert kept["peak_tok_per_sec"] == theirs["peak_tok_per_sec"]
    # Alice's run dir still holds her numbers; a full build does not bring them back, in
    # the catalog or in her views.
    assert bench(alice, "catalog", "build", "--full") == 0
    [kept] = [e for e in load_runs(alice) if e["run_id"] == shared]
    assert kept["peak_tok_per_sec"] == theirs["peak_tok_per_sec"]
    for name in view_names(kept):
        view = json.loads((alice / STORE / "runs" / name).read_text())
        assert view["peak_tok_per_sec"] == theirs["peak_tok_per_sec"]
    # Nor does an incremental build whose reader writes the views of the dirs it reads (as
    # it does past POOL_MIN dirs): her run dir touched, so it is read again.
    monkeypatch.setattr(build_module, "POOL_MIN", 1)
    monkeypatch.setenv("BENCHLAB_BUILD_JOBS", "1")
    [run_dir] = list((alice / STORE / "runs" / "by-machine").glob(f"*/{shared}"))
    (run_dir / "record.json").write_bytes((run_dir / "record.json").read_bytes())
    os.utime(run_dir)
    assert bench(alice, "catalog", "build") == 0
    for name in view_names(kept):
        view = json.loads((alice / STORE / "runs" / name).read_text())
        assert view["peak_tok_per_sec"] == theirs["peak_tok_per_sec"]


def load_runs(repo: Path) -> list[dict]:
    from benchlab.catalog.read import load_catalog

    return load_catalog(repo / STORE / "catalog.json").runs
