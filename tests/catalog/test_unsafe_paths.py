"""One reader, one writer path (ARCHITECTURE.md, One reader, one writer path), each fault
injected for real in a real git repository: a committed symlink at `machines/`,
`machines/<id>`, `charts/` or `site/build` is refused in one line with nothing written
outside the repository; a FIFO or a link to /dev/zero as catalog.json or as a shard is one
line from `resolve` and `retract` within seconds. Commands that could hang run in a
subprocess with a timeout, so a regression fails instead of hanging the suite."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from benchlab.catalog.shards import iter_shards

Bench = Callable[..., tuple[int, str, str]]
TIMEOUT = 20
QUICK_S = 10.0
"""A refusal takes an interpreter start and a few opens: well under this, even on a loaded
box; a reader that blocks or reads /dev/zero runs into TIMEOUT instead."""
REPO = Path(__file__).resolve().parents[2]


def cli(store: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "BENCHLAB_STORE"}
    return subprocess.run(
        [sys.executable, "-m", "benchlab", "--store", str(store), *argv],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=environ,
        cwd=store,
    )


def one_error(done: subprocess.CompletedProcess[str]) -> str:
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    errors = [line for line in lines if line.startswith("bench: error:")]
    assert len(errors) == 1, done.stderr
    return errors[0]


def tree(path: Path) -> list[tuple[str, int]]:
    return sorted((p.relative_to(path).as_posix(), p.lstat().st_mtime_ns) for p in path.rglob("*"))


@pytest.fixture
def built(store: Path, make_fleet: Callable[..., list[str]], bench: Bench) -> Path:
    """A store of 8 runs in a git repository, built (machines/<id>/specs.json included)."""
    subprocess.run(["git", "init", "-q", str(store.parents[1])], check=True)
    make_fleet(store, 8, seed=7, step_s=3600)
    code, _, err = bench("--store", str(store), "catalog", "build")
    assert code == 0, err
    return store


def _run_id(store: Path) -> str:
    for _, path in iter_shards(store / "catalog.json"):
        line = path.read_bytes().split(b"\n", 1)[0]
        start = line.index(b'"run_id":"') + len(b'"run_id":"')
        return line[start : line.index(b'"', start)].decode()
    raise AssertionError("no shard")


# --- writes -------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["machines", "machine-dir"])
def test_a_linked_machines_dir_is_refused_by_the_build(
    built: Path, tmp_path: Path, where: str
) -> None:
    machines = built / "machines"
    outside = tmp_path / "outside"
    if where == "machines":
        shutil.move(machines, outside)
        machines.symlink_to(outside, target_is_directory=True)
    else:
        victim = sorted(p for p in machines.iterdir() if p.is_dir())[0]
        shutil.move(victim, outside)
        victim.symlink_to(outside, target_is_directory=True)
    before = tree(outside)
    done = cli(built, "catalog", "build", "--full")
    message = one_error(done)
    assert "symbolic link" in message, message
    assert tree(outside) == before  # nothing written through the link
    assert not list(outside.rglob(".*.tmp"))


def test_a_linked_charts_dir_is_refused_by_bench_chart(built: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside-charts"
    outside.mkdir()
    (built / "charts").symlink_to(outside, target_is_directory=True)
    done = cli(built, "chart")
    message = one_error(done)
    assert "charts" in message and "symbolic link" in message, message
    assert list(outside.iterdir()) == []


def test_a_linked_site_build_is_one_line_not_a_traceback(built: Path, tmp_path: Path) -> None:
    source = built.parents[1] / "site"
    shutil.copytree(REPO / "site", source, ignore=shutil.ignore_patterns("build", "generated"))
    outside = tmp_path / "outside-site"
    outside.mkdir()
    (outside / "keep.txt").write_text("not benchlab's\n")
    (source / "build").symlink_to(outside, target_is_directory=True)
    done = cli(built, "site", "build", "--source", str(source))
    message = one_error(done)
    assert "build" in message and "symbolic link" in message, message
    assert sorted(p.name for p in outside.iterdir()) == ["keep.txt"]


# --- reads that must not hang -------------------------------------------------------------


def _plant(path: Path, kind: str) -> None:
    path.unlink(missing_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
@pytest.mark.parametrize("verb", ["resolve", "retract"])
def test_catalog_json_that_is_no_regular_file_is_one_quick_line(
    built: Path, kind: str, verb: str
) -> None:
    run_id = _run_id(built)
    _plant(built / "catalog.json", kind)
    argv = ["resolve", run_id, "--keep", "1"] if verb == "resolve" else ["retract", run_id]
    start = time.monotonic()
    done = cli(built, "catalog", *argv)
    message = one_error(done)
    assert time.monotonic() - start < QUICK_S
    assert "catalog.json" in message
    assert ("FIFO" if kind == "fifo" else "symbolic link") in message, message


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
@pytest.mark.parametrize("verb", ["resolve", "retract"])
def test_a_shard_that_is_no_regular_file_is_one_quick_line(
    built: Path, kind: str, verb: str
) -> None:
    run_id = _run_id(built)
    _, path = next(iter(iter_shards(built / "catalog.json")))
    bad = path.with_name("2099-W01." + path.name.split(".", 1)[1])
    _plant(bad, kind)
    argv = ["resolve", run_id, "--keep", "1"] if verb == "resolve" else ["retract", run_id]
    done = cli(built, "catalog", *argv)
    message = one_error(done)
    assert bad.name in message
    assert ("FIFO" if kind == "fifo" else "symbolic link") in message, message
