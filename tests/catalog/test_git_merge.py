"""Two clones build different runs into the same catalog shard; `git merge` with the installed
driver merges them with no conflict. Real git repos, real `git clone`, real merge driver
process. (Runs 2 and 3 of the seed-1 fleet are one machine's runs in one ISO week, so both
clones create the same shard: without the driver that is an add/add conflict.)"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.kit.catalog import catalog_doc

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
    (alice / STORE / "catalog.json").write_text('{"$schema": "benchmark/catalog.v1", "runs": 3}\n')
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
