"""The catalog under faults: each test injects the fault for real (a second process, a file
changed in place, a hostile document, a second clone sharing the installed package)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from benchlab.catalog import build as build_module
from benchlab.catalog.build import LOCK_NAME, build
from benchlab.catalog.merge import merge_catalogs
from benchlab.catalog.validate import validate
from benchlab.errors import StoreError
from benchlab.layout import Store, canonical_json

Bench = Callable[..., tuple[int, str, str]]
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def fleet(store: Path, make_fleet: Callable[..., list[str]]) -> Path:
    make_fleet(store, 20, seed=9)
    return store


def test_a_catalog_replaced_during_a_build_loses_nothing(
    fleet: Path, make_fleet: Callable[..., list[str]], tmp_path: Path, monkeypatch
) -> None:
    """A `git pull` lands a catalog.json with another clone's runs while this clone builds:
    the build merges them in instead of writing over them."""
    other = tmp_path / "other" / "experiments" / "benchmark"
    make_fleet(other, 4, seed=10, first=500)
    build(Store(other))
    pulled = json.loads((other / "catalog.json").read_text())
    theirs = {e["run_id"] for e in pulled["runs"]}
    build(Store(fleet))
    make_fleet(fleet, 3, seed=9, first=20)  # new local runs for the next build to read

    real_specs = build_module._machine_specs

    def pull_while_scanning(store: Store) -> dict:
        # Another process (git) replaces catalog.json by rename, mid-build.
        mine = json.loads((fleet / "catalog.json").read_text())
        merged = canonical_json(merge_catalogs(mine, pulled))
        script = (
            "import os, sys; p = sys.argv[1]; open(p + '.pull', 'w').write(sys.argv[2]); "
            "os.replace(p + '.pull', p)"
        )
        subprocess.run(
            [sys.executable, "-c", script, str(fleet / "catalog.json"), merged], check=True
        )
        return real_specs(store)

    monkeypatch.setattr(build_module, "_machine_specs", pull_while_scanning)
    result = build(Store(fleet))
    ids = {e["run_id"] for e in json.loads((fleet / "catalog.json").read_text())["runs"]}
    assert theirs <= ids, "the pulled runs were dropped"
    assert result.concurrent_merged == len(theirs) and len(ids) == 23 + len(theirs)
    assert validate(Store(fleet)).runs == len(ids)


def test_a_run_file_corrected_in_place_is_read_again(fleet: Path) -> None:
    """No rename, and the dir's mtime put back: the file's own identity still moved."""
    build(Store(fleet))
    record_path = next(
        p
        for p in sorted(fleet.glob("runs/by-machine/*/*/record.json"))
        if json.loads(p.read_text())["status"] == "ok"
    )
    dir_stat = record_path.parent.stat()
    record = json.loads(record_path.read_text())
    record.update(status="failed", failure_kind="parse", error="found broken later")
    with open(record_path, "r+", encoding="utf-8") as handle:  # in place, same inode
        handle.seek(0)
        handle.write(json.dumps(record))
        handle.truncate()
    os.utime(record_path.parent, ns=(dir_stat.st_atime_ns, dir_stat.st_mtime_ns))
    result = build(Store(fleet))
    assert (result.dirs_read, result.changed) == (1, 1)
    catalog = json.loads((fleet / "catalog.json").read_text())
    [entry] = [e for e in catalog["runs"] if e["run_id"] == record["run_id"]]
    assert entry["status"] == "failed"


def test_a_second_build_waits_for_the_lock_and_a_dead_holder_is_taken_over(fleet: Path) -> None:
    lock = fleet / "runs" / LOCK_NAME
    lock.parent.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        lock.write_text(json.dumps({"pid": holder.pid, "host": socket.gethostname()}))
        with pytest.raises(StoreError, match=rf"another catalog build .*pid {holder.pid} "):
            with build_module.catalog_lock(Store(fleet), wait_s=0.5):
                pass
    finally:
        holder.kill()
        holder.wait()
    assert build(Store(fleet)).total == 20  # the holder is gone: its lock is taken over
    assert not lock.exists()


@pytest.mark.parametrize("verb", [["list"], ["best"], ["catalog", "build"], ["table"]])
def test_a_deeply_nested_catalog_is_one_line_error(store: Path, bench: Bench, verb) -> None:
    (store / "catalog.json").write_text("[" * 100_000 + "]" * 100_000)
    before = (store / "catalog.json").read_bytes()
    code, out, err = bench("--store", str(store), *verb)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err and "catalog.json" in lines[0]
    assert (store / "catalog.json").read_bytes() == before


def test_a_second_clone_sharing_the_install_builds_its_own_site(
    tmp_path: Path, make_fleet: Callable[..., list[str]]
) -> None:
    """The site's sources come from the repo the store is in, not from where benchlab is
    installed (one virtualenv, two clones)."""
    clones = []
    for name in ("first", "second"):
        root = tmp_path / name
        shutil.copytree(REPO / "site", root / "site", ignore=shutil.ignore_patterns("build"))
        store = root / "experiments" / "benchmark"
        make_fleet(store, 3, seed=1)
        build(Store(store))
        clones.append(root)
    installed = REPO / "site" / "docs" / "generated"

    def listing() -> list[tuple[str, int]]:
        return sorted((p.name, p.stat().st_mtime_ns) for p in installed.glob("*"))

    before = listing()
    env = {k: v for k, v in os.environ.items() if k != "BENCHLAB_STORE"}
    subprocess.run(
        [sys.executable, "-m", "benchlab", "site", "build", "--no-mkdocs"],
        cwd=clones[1],
        env=env,
        check=True,
        capture_output=True,
    )
    assert (clones[1] / "site" / "docs" / "generated").is_dir()
    assert not (clones[0] / "site" / "docs" / "generated").exists()
    assert listing() == before  # the installed package's own repo is untouched
