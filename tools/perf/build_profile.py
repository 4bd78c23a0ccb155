"""Where a `bench catalog build` spends its time: per phase, wall and CPU, and peak memory.

    python tools/perf/build_profile.py --store /tmp/bs-100k [--runs 100000] [--rounds 3]
                                       [--added 1000] [--jobs N] [--ref-src DIR]

On a fleet made by make_fleet.py (made here with --runs if the store has no run dirs):
- full: every build output removed (catalog, shards, views, caches), then one build;
- no-op: a build with nothing new;
- added: `--added` new runs (make_fleet --first), then a build (median of --rounds; each
  round adds its own runs, so the fleet grows by rounds x added).

`--cold` drops the kernel's page, dentry and inode caches before the full build (root
only): at a million runs the run files (about 16 GB of pages) do not fit in a small
machine's memory, so a full build there reads them from disk, and that is what a cold
build measures. `--full-only` stops after the full build. `--floor` first times `cat` of
every run file from a cold cache: no build can read the run dirs faster than that, which
is what a full build's time is to be judged against on a given disk.

Each build is a child process (interpreter start included) collected with os.wait4:
wall seconds, CPU seconds (user + system, the build and its workers), the largest single
process's peak RSS, and the peak of the whole process tree's RSS (sampled every 20 ms).
The v3 build logs its phases at DEBUG (open, stat, read, shards, head, views, cache, warm:
wall, its own CPU, its workers' CPU); they are printed under each build.

`--ref-src DIR` runs the same scenarios first with another checkout's `src` (say, a
`git worktree` of the commit before) on a copy of the store, for a before/after table.
The machine is shared: prefer the CPU figures, and compare medians.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import make_fleet  # a sibling script: tools/perf is first on sys.path

OUTPUTS = ("catalog.json", "catalog", "machines", "runs/by-model", "runs/by-date")
CACHES = ("runs/.catalog-cache.json", "runs/.catalog-cache", "runs/.cache", "runs/.catalog.lock")
PHASES = re.compile(r"catalog build phases: (.*)")
PHASE = re.compile(r"(\w+) wall=([\d.]+) cpu=([\d.]+) workers=([\d.]+)")
RUNNER = (
    "import logging, sys\n"
    "logging.basicConfig(level=logging.DEBUG, stream=sys.stderr, format='%(message)s')\n"
    "from benchlab.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


@dataclass
class Build:
    wall: float
    cpu: float
    rss_max: int  # bytes, the largest single process
    rss_tree: int  # bytes, the whole process tree at its peak (sampled)
    summary: str
    phases: list[tuple[str, float, float, float]] = field(default_factory=list)


def tree_rss(pid: int) -> int:
    """Resident bytes of a process and all its descendants, from /proc (0 where absent)."""
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        try:
            with open(f"/proc/{current}/status", encoding="ascii", errors="replace") as handle:
                for line in handle:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
                        break
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children", encoding="ascii") as handle:
                    todo.extend(int(child) for child in handle.read().split())
        except (OSError, ValueError):
            continue
    return total


def run_build(store: Path, src: Path | None, jobs: int | None, *extra: str) -> Build:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    argv = [sys.executable, "-c", RUNNER, "--store", str(store), "catalog", "build", *extra]
    if jobs is not None and src is None:
        env["BENCHLAB_BUILD_JOBS"] = str(jobs)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, stdout=out, stderr=err)
        peak = [0]
        done = threading.Event()

        def sample() -> None:
            while not done.wait(0.02):
                peak[0] = max(peak[0], tree_rss(proc.pid))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        done.set()
        sampler.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text, log = out.read().decode(), err.read().decode()
    if proc.returncode not in (0, 2):
        raise SystemExit(f"build failed ({proc.returncode}): {log[-3000:]}")
    phases = []
    for match in PHASES.finditer(log):
        phases = [(n, float(w), float(c), float(k)) for n, w, c, k in PHASE.findall(match[1])]
    return Build(
        wall,
        usage.ru_utime + usage.ru_stime,
        usage.ru_maxrss * 1024,
        peak[0],
        text.strip().splitlines()[-1] if text.strip() else "",
        phases,
    )


def clean(store: Path) -> None:
    for name in (*OUTPUTS, *CACHES):
        path = store / name
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()


def drop_caches() -> None:
    """Write back dirty pages and drop the page, dentry and inode caches (needs root)."""
    os.sync()
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
    except OSError as exc:
        raise SystemExit(f"--cold: cannot drop the kernel's caches ({exc}); run as root") from None


def read_floor(store: Path) -> None:
    """Wall and CPU seconds of `cat` reading every run file, caches dropped first."""
    drop_caches()
    command = "find runs/by-machine -type f -name '*.json' -print0 | xargs -0 -n 2000 cat"
    started = time.perf_counter()
    with open(os.devnull, "wb") as sink:
        proc = subprocess.Popen(["sh", "-c", command], cwd=store, stdout=sink)
        _pid, _status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    cpu = usage.ru_utime + usage.ru_stime
    print(f"  cat of every run file (cold): wall {wall:8.2f} s  cpu {cpu:8.2f} s")


def show(label: str, builds: list[Build]) -> None:
    wall = statistics.median(b.wall for b in builds)
    cpu = statistics.median(b.cpu for b in builds)
    rss = max(b.rss_max for b in builds) / 1e6
    tree = max(b.rss_tree for b in builds) / 1e6
    print(
        f"  {label:8s} wall {wall:8.2f} s  cpu {cpu:8.2f} s  peak rss {rss:7.0f} MB "
        f"(process tree {tree:7.0f} MB)  [{len(builds)} run(s)]  {builds[-1].summary}"
    )
    last = builds[len(builds) // 2]
    for name, w, c, k in last.phases:
        print(f"           {name:7s} wall {w:7.2f} s  cpu {c:7.2f} s  workers {k:7.2f} s")


def scenario(
    store: Path, runs: int, src: Path | None, args: argparse.Namespace, first: int
) -> None:
    name = "before (" + str(src) + ")" if src is not None else "after (this checkout)"
    print(f"{name}: {store} ({runs} runs)")
    clean(store)
    if args.floor:
        read_floor(store)
    if args.cold:
        drop_caches()
    show("full (cold)" if args.cold else "full", [run_build(store, src, args.jobs)])
    if args.full_only:
        return
    show("no-op", [run_build(store, src, args.jobs) for _ in range(args.rounds)])
    added = []
    step = make_fleet.default_step(runs)
    for _ in range(args.rounds):
        make_fleet.make_fleet(store, args.added, seed=0, first=first, step_s=step)
        first += args.added
        added.append(run_build(store, src, args.jobs))
    show(f"+{args.added}", added)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=None, help="make the fleet if absent")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--added", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--ref-src", type=Path, default=None)
    parser.add_argument("--cold", action="store_true", help="drop the kernel's caches first")
    parser.add_argument("--floor", action="store_true", help="time `cat` of the run files")
    parser.add_argument("--full-only", action="store_true", help="only the full build")
    args = parser.parse_args(argv)
    store = args.store
    by_machine = store / "runs" / "by-machine"
    if not by_machine.is_dir():
        if args.runs is None:
            raise SystemExit(f"{store}: no run dirs; pass --runs to make a fleet")
        make_fleet.make_fleet(store, args.runs, seed=0)
    runs = sum(1 for m in by_machine.iterdir() for r in m.iterdir() if r.is_dir())
    first = runs  # the fleet's next runs: they land in its newest weeks
    if args.ref_src is not None:
        copy = store.with_name(store.name + "-ref")
        if copy.exists():
            shutil.rmtree(copy)
        shutil.copytree(store / "runs" / "by-machine", copy / "runs" / "by-machine")
        scenario(copy, runs, args.ref_src, args, first)
        shutil.rmtree(copy)
    scenario(store, runs, None, args, first)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
