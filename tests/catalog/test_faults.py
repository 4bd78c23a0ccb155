"""The catalog under faults: each test injects the fault for real (a second process, a file
changed in place, a hostile document, a second clone sharing the installed package)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.kit.catalog import catalog_doc
from tests.kit.fleet import load_make_fleet

from benchlab.catalog import scan
from benchlab.catalog.build import Seams, build
from benchlab.catalog.inventory import machine_specs
from benchlab.catalog.lock import LOCK_NAME, catalog_lock
from benchlab.catalog.merge import merge_heads
from benchlab.catalog.read import load_catalog
from benchlab.catalog.shards import merge_shard_bytes, parse_lines, shard_name
from benchlab.catalog.text import render
from benchlab.catalog.validate import validate
from benchlab.errors import StoreError
from benchlab.layout import Store

Bench = Callable[..., tuple[int, str, str]]
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def fleet(store: Path, make_fleet: Callable[..., list[str]]) -> Path:
    make_fleet(store, 20, seed=9)
    return store


STEP = 3600


def replace_by_rename(path: Path, data: bytes) -> None:
    """Another process (git) replaces a file by rename, as a checkout does."""
    script = (
        "import os, sys; p = sys.argv[1]; open(p + '.pull', 'wb').write(sys.stdin.buffer.read()); "
        "os.replace(p + '.pull', p)"
    )
    subprocess.run([sys.executable, "-c", script, str(path)], input=data, check=True)


def test_a_catalog_replaced_during_a_build_loses_nothing(
    fleet: Path, make_fleet: Callable[..., list[str]], tmp_path: Path, monkeypatch
) -> None:
    """A `git pull` brings a head holding runs inline into ours while this clone builds:
    the build shards them instead of writing over them."""
    other = tmp_path / "other" / "experiments" / "benchmark"
    make_fleet(other, 4, seed=10, first=500)
    build(Store(other))
    pulled = catalog_doc(other / "catalog.json")  # the head, its runs inline
    theirs = {e["run_id"] for e in pulled["runs"]}
    build(Store(fleet))
    make_fleet(fleet, 3, seed=9, first=20)  # new local runs for the next build to read

    def pull_while_building(store: Store) -> dict:
        mine = json.loads((fleet / "catalog.json").read_text())
        replace_by_rename(fleet / "catalog.json", render(merge_heads(mine, pulled)).encode())
        return machine_specs(store)

    result = build(Store(fleet), seams=Seams(machine_specs=pull_while_building))
    ids = {e["run_id"] for e in load_catalog(fleet / "catalog.json").runs}
    assert theirs <= ids, "the pulled runs were dropped"
    assert result.concurrent_merged == len(theirs) and len(ids) == 23 + len(theirs)
    assert "runs" not in json.loads((fleet / "catalog.json").read_text())  # now in shards
    assert validate(Store(fleet)).runs == len(ids)


def test_a_shard_replaced_during_a_build_loses_nothing(
    fleet: Path, make_fleet: Callable[..., list[str]], tmp_path: Path, monkeypatch
) -> None:
    """Another clone's run lands in the very shard this build is about to rewrite, pulled
    between the build reading that shard and replacing it: both runs stay."""
    build(Store(fleet))
    fleet_module = load_make_fleet()
    mine = fleet_module.run_documents(9, 20, STEP)
    week = shard_name(
        {"machine_id": mine["machine"], "timestamp": mine["manifest.json"]["timestamp"]}
    )
    index = next(
        i
        for i in range(21, 400)
        if shard_name(
            {
                "machine_id": (doc := fleet_module.run_documents(9, i, STEP))["machine"],
                "timestamp": doc["manifest.json"]["timestamp"],
            }
        )
        == week
    )
    other = tmp_path / "other" / "experiments" / "benchmark"
    [theirs] = make_fleet(other, 1, seed=9, first=index, step_s=STEP)
    build(Store(other))
    [ours] = make_fleet(fleet, 1, seed=9, first=20, step_s=STEP)

    def pull_while_building(store: Store) -> dict:
        target = fleet / week  # may not be there yet: this build is about to make it
        ours_now = target.read_bytes() if target.exists() else b""
        target.parent.mkdir(parents=True, exist_ok=True)
        replace_by_rename(target, merge_shard_bytes(ours_now, (other / week).read_bytes()))
        return machine_specs(store)

    result = build(Store(fleet), seams=Seams(machine_specs=pull_while_building))
    assert (result.new, result.concurrent_merged) == (1, 1)
    lines = parse_lines((fleet / week).read_bytes(), week)
    assert {ours, theirs} <= {e["run_id"] for e in lines}
    assert validate(Store(fleet)).runs == 22
    monkeypatch.undo()
    again = build(Store(fleet))  # their run is known now: nothing to do
    assert (again.new, again.dirs_read, again.total) == (0, 0, 22)


def edit_in_place(record_path: Path, **changes: object) -> dict:
    record = json.loads(record_path.read_text())
    record.update(changes)
    with open(record_path, "r+", encoding="utf-8") as handle:  # in place, same inode
        handle.seek(0)
        handle.write(json.dumps(record))
        handle.truncate()
    return record


def ok_record(fleet: Path) -> Path:
    return next(
        p
        for p in sorted(fleet.glob("runs/by-machine/*/*/record.json"))
        if json.loads(p.read_text())["status"] == "ok"
    )


def test_a_run_dir_whose_mtime_was_put_back_is_read_again(fleet: Path) -> None:
    """A file corrected in place and the dir's mtime put back (`rsync -a`, `cp -p`): the
    dir's ctime still moved."""
    build(Store(fleet))
    record_path = ok_record(fleet)
    dir_stat = record_path.parent.stat()
    record = edit_in_place(record_path, status="failed", failure_kind="parse", error="later")
    os.utime(record_path.parent, ns=(dir_stat.st_atime_ns, dir_stat.st_mtime_ns))
    result = build(Store(fleet))
    assert (result.dirs_read, result.changed) == (1, 1)
    assert load_catalog(fleet / "catalog.json").entry(record["run_id"])["status"] == "failed"


def test_a_run_file_corrected_in_place_is_read_again(fleet: Path, monkeypatch) -> None:
    """An in-place edit leaves the dir's stat alone. Within a second of the dir's last
    change its files' signatures are checked too (a change in the same timestamp tick);
    after that, record.json's own ctime (stat'd beside its dir) still shows an in-place
    edit of the record. The other run files are written once, by rename; an in-place edit
    of one of them is seen by `--full` (which re-reads every run dir)."""
    build(Store(fleet))  # the fleet was just written: its dirs are "racy"
    record_path = ok_record(fleet)
    record = edit_in_place(record_path, status="failed", failure_kind="parse", error="later")
    result = build(Store(fleet))
    assert (result.dirs_read, result.changed) == (1, 1)

    monkeypatch.setattr(scan, "RACY_NS", -(10**18))  # as if every dir were old
    build(Store(fleet))
    dir_stat = record_path.parent.stat()
    edit_in_place(record_path, status="ok", failure_kind=None, error=None)
    assert record_path.parent.stat().st_ctime_ns == dir_stat.st_ctime_ns  # the dir is as it was
    result = build(Store(fleet))  # incremental: the record's ctime moved
    assert (result.dirs_read, result.changed) == (1, 1)
    assert load_catalog(fleet / "catalog.json").entry(record["run_id"])["status"] == "ok"
    assert build(Store(fleet)).dirs_read == 0

    kernel = record_path.parent / "kernel.json"
    kernel.write_text(kernel.read_text())  # in place, another run file: left to --full
    assert build(Store(fleet)).dirs_read == 0
    assert build(Store(fleet), full=True).dirs_read == 20


def test_a_second_build_waits_for_the_lock_and_a_dead_holder_is_taken_over(fleet: Path) -> None:
    lock = fleet / "runs" / LOCK_NAME
    lock.parent.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        lock.write_text(json.dumps({"pid": holder.pid, "host": socket.gethostname()}))
        with pytest.raises(StoreError, match=rf"another catalog build .*pid {holder.pid} "):
            with catalog_lock(Store(fleet), wait_s=0.5):
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


@pytest.mark.slow
def test_a_second_clone_sharing_the_install_builds_its_own_site(
    tmp_path: Path, make_fleet: Callable[..., list[str]]
) -> None:
    """The site's sources come from the repo the store is in, not from where benchlab is
    installed (one virtualenv, two clones)."""
    clones = []
    for name in ("first", "second"):
        root = tmp_path / name
        # The site's sources as a clone has them: not what a build here left (gitignored).
        ignored = shutil.ignore_patterns("build", "generated")
        shutil.copytree(REPO / "site", root / "site", ignore=ignored)
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


@contextlib.contextmanager
def mounted(target: Path, *how: list[str]) -> Iterator[Path]:
    """A real mount (tmpfs, or a bind remounted read-only), always unmounted after."""
    target.mkdir(parents=True, exist_ok=True)
    done = 0
    try:
        for argv in how:
            try:
                subprocess.run(argv, check=True, capture_output=True, timeout=30)
            except (OSError, subprocess.CalledProcessError) as exc:
                pytest.skip(f"cannot mount here: {exc}")
            done += 1
        yield target
    finally:
        for _ in range(done):
            subprocess.run(["umount", str(target)], check=False, capture_output=True, timeout=30)


def tracked(root: Path) -> dict[str, bytes]:
    """What git tracks of the catalog: head, shards, inventory and public specs, and any
    stray temp or kept-aside file beside them."""
    files = [*sorted(root.glob("*catalog.json*")), *sorted((root / "catalog").rglob("*"))]
    files += sorted((root / "machines").rglob("*"))
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in files if p.is_file()}


def fill(root: Path, leave: int) -> None:
    """Fill the file system of `root` to ENOSPC, then free `leave` bytes."""
    filler = root / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        with contextlib.suppress(OSError):
            for _ in range(1 << 16):  # bounded: 256 MiB at most
                os.write(fd, b"\0" * 4096)
    finally:
        os.close(fd)
    size = filler.stat().st_size
    os.truncate(filler, max(0, size - leave))


@pytest.mark.slow
@pytest.mark.parametrize(
    "first",
    [True, False],
    ids=["first-build", "incremental"],
)
def test_a_full_disk_leaves_the_old_catalog_or_the_new_one(
    tmp_path: Path,
    make_fleet: Callable[..., list[str]],
    bench: Bench,
    monkeypatch: pytest.MonkeyPatch,
    first: bool,
) -> None:
    """A real small tmpfs, filled to leave 0 to 1 MiB free: each build either ends with
    the whole new catalog, or stops with one line and leaves the old one byte for byte
    (before, a full disk left shards without their head, and a traceback)."""
    seed = tmp_path / "seed"
    make_fleet(seed, 30, seed=4)
    if not first:
        build(Store(seed))
        make_fleet(seed, 6, seed=4, first=30, step_s=1296000)
    reference = tmp_path / "reference"
    shutil.copytree(seed, reference, symlinks=True)
    build(Store(reference))
    new = tracked(reference)
    Store(seed).write_aside.mkdir(parents=True, exist_ok=True)
    (Store(seed).write_aside / "0.2025-W01.jsonl").write_text("left by a killed build\n")
    outcomes = set()
    pages = -(-len(new["catalog.json"]) // 4096) * 4096  # just room for the new head
    edges = {pages + step for step in (-4096, 0, 4096, 8192)}
    for leave in sorted({0, 8 << 10, 32 << 10, 64 << 10, 128 << 10, 256 << 10, 1 << 20} | edges):
        mount = tmp_path / f"fs-{leave}"
        with mounted(mount, ["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount)]):
            root = mount / "store"
            shutil.copytree(seed, root, symlinks=True)
            before = tracked(root)
            fill(mount, leave)
            code, _, err = bench("--store", str(root), "catalog", "build")
            (mount / "filler").unlink()
            now = tracked(root)
            left = {p.name for p in Store(root).write_aside.glob("*")}
            assert left <= {"0.2025-W01.jsonl"}  # nothing of this build is left aside
            if code == 0:
                assert not left  # and what a killed build left there is gone
                outcomes.add("built")
                assert now == new and validate(Store(root)).runs == 36 - 6 * first
                continue
            lines = err.strip().splitlines()
            assert code == 2 and "Traceback" not in err, err
            assert len(lines) == 1 and "No space left on device" in lines[0], err
            # Stopped before its commit (the old catalog) or after it, in the private
            # views or cache (the new one); never a mix, never shards without a head.
            assert now in (before, new), f"{leave} bytes free: the catalog was half-written"
            outcomes.add("refused, old kept" if now == before else "refused, new written")
    assert {"built", "refused, old kept"} <= outcomes, outcomes  # both ends were met


def test_a_read_only_store_is_one_line_and_changes_nothing(
    fleet: Path, make_fleet: Callable[..., list[str]], bench: Bench
) -> None:
    build(Store(fleet))
    make_fleet(fleet, 3, seed=9, first=20, step_s=1296000)
    before = tracked(fleet)
    bind = ["mount", "--bind", str(fleet), str(fleet)]
    ro = ["mount", "-o", "remount,bind,ro", str(fleet)]
    with mounted(fleet, bind, ro):
        for verb in (["catalog", "build"], ["catalog", "build", "--full"]):
            code, _, err = bench("--store", str(fleet), *verb)
            lines = err.strip().splitlines()
            assert code == 2 and "Traceback" not in err, err
            assert len(lines) == 1 and lines[0].startswith("bench: error: "), err
            assert "Read-only file system" in lines[0] and str(fleet) in lines[0]
        assert tracked(fleet) == before
    assert build(Store(fleet)).new == 3  # writable again: the build goes on as if never stopped
