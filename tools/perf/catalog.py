"""Catalog performance on a 100,000-run synthetic fleet (issue 2 targets).

    python tools/perf/catalog.py [--dir /tmp/bl-catalog-perf] [--rounds 3] [--full-again]
                                 [--runs 100000] [--format v2|v3]

Prints:
- full build from scratch (`bench catalog build` on 100,000 run dirs, no catalog, no cache);
  measured once per fleet dir and reused afterwards unless --full-again;
- incremental build adding 1,000 new runs to the 100,000-run catalog (median of --rounds;
  target <= 10 s); the store is put back to the 100,000-run baseline after every round;
- `bench best --model smollm2-135m` wall time including interpreter start (median of 5;
  target <= 1.0 s), when the `best` verb exists.

- the largest tracked catalog file (catalog.json, or the largest v3 shard); target <= 20 MB.

`--format v3` sets BENCHLAB_CATALOG_FORMAT=v3 (the sharded catalog, see catalog/shards.py).
Every figure is the wall time of a `python -m benchlab ...` subprocess, so interpreter
start-up is included. The fleet is generated once (about a minute) and reused.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

# A sibling script: `python tools/perf/catalog.py` puts tools/perf first on sys.path.
import make_fleet

RUNS = 100_000
ADDED = 1_000
SEED = 0
SNAPSHOT = ("catalog.json", "machines/catalog.json", "runs/.catalog-cache.json")


def largest_tracked(store: Path) -> tuple[str, int]:
    """(name, bytes) of the largest public catalog file: catalog.json or a v3 shard."""
    files = [store / "catalog.json", *sorted((store / "catalog").glob("*/*.jsonl"))]
    sizes = [(p.relative_to(store).as_posix(), p.stat().st_size) for p in files if p.exists()]
    return max(sizes, key=lambda item: item[1])


def bench(store: Path, *args: str, check: bool = True) -> tuple[float, str]:
    """Wall time of one `python -m benchlab --store STORE ARGS` and its stdout."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "benchlab", "--store", str(store), *args],
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if check and done.returncode != 0:
        raise SystemExit(f"bench {' '.join(args)} failed: {done.stderr.strip()}")
    return elapsed, done.stdout.strip()


def ensure_fleet(store: Path, fleet) -> None:
    marker = store / f".fleet-{RUNS}-seed{SEED}"
    if marker.exists():
        return
    if store.exists():
        shutil.rmtree(store)
    print(f"generating {RUNS} runs in {store} ...", flush=True)
    started = time.perf_counter()
    fleet.make_fleet(store, RUNS, SEED)
    print(f"  generated in {time.perf_counter() - started:.1f} s", flush=True)
    marker.touch()


def clear_derived(store: Path) -> None:
    for name in SNAPSHOT:
        (store / name).unlink(missing_ok=True)
    shutil.rmtree(store / "catalog", ignore_errors=True)  # v3 shards
    for name in ("by-model", "by-date"):
        shutil.rmtree(store / "runs" / name, ignore_errors=True)


def full_build(store: Path, baseline: Path, again: bool) -> tuple[float, bool]:
    record = baseline / "full.json"
    if record.exists() and not again:
        return json.loads(record.read_text())["seconds"], True
    clear_derived(store)
    elapsed, out = bench(store, "catalog", "build")
    print(f"  {out}", flush=True)
    baseline.mkdir(parents=True, exist_ok=True)
    for name in SNAPSHOT:
        target = baseline / name.replace("/", "__")
        shutil.copyfile(store / name, target)
    shutil.rmtree(baseline / "catalog", ignore_errors=True)
    if (store / "catalog").is_dir():
        shutil.copytree(store / "catalog", baseline / "catalog")
    record.write_text(json.dumps({"seconds": elapsed}))
    return elapsed, False


def restore(store: Path, baseline: Path, added: list[str], fleet) -> None:
    """Back to the 100,000-run baseline: drop added run dirs and views, restore files."""
    from benchlab.catalog.read import load_catalog
    from benchlab.catalog.views import view_names

    wanted = set(added)
    for entry in load_catalog(store / "catalog.json").runs:
        if entry["run_id"] in wanted:
            for name in view_names(entry):
                (store / "runs" / name).unlink(missing_ok=True)
            shutil.rmtree(store / entry["path"], ignore_errors=True)
    for name in SNAPSHOT:
        shutil.copyfile(baseline / name.replace("/", "__"), store / name)
    if (baseline / "catalog").is_dir():
        shutil.rmtree(store / "catalog", ignore_errors=True)
        shutil.copytree(baseline / "catalog", store / "catalog")


def incremental(store: Path, baseline: Path, rounds: int, fleet) -> list[float]:
    step = fleet.default_step(RUNS)
    times = []
    for round_no in range(rounds):
        first = RUNS + round_no * ADDED
        added = fleet.make_fleet(store, ADDED, SEED, first=first, step_s=step)
        elapsed, out = bench(store, "catalog", "build")
        print(f"  round {round_no + 1}: {elapsed:.2f} s  {out}", flush=True)
        if f"{ADDED} new" not in out or f"{RUNS + ADDED} runs" not in out:
            raise SystemExit(f"unexpected build summary: {out}")
        times.append(elapsed)
        restore(store, baseline, added, fleet)
    return times


def best_times(store: Path) -> list[float] | None:
    probe = subprocess.run(
        [sys.executable, "-m", "benchlab", "best", "--help"], capture_output=True, check=False
    )
    if probe.returncode != 0:
        return None
    times = []
    for _ in range(5):
        elapsed, _out = bench(store, "best", "--model", "smollm2-135m")
        times.append(elapsed)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=Path("/tmp/bl-catalog-perf"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--full-again", action="store_true", help="re-measure the full build")
    parser.add_argument("--runs", type=int, default=RUNS, help="fleet size (default 100000)")
    parser.add_argument("--format", choices=("v2", "v3"), default="v2")
    args = parser.parse_args()
    globals()["RUNS"] = args.runs
    if args.format == "v3":
        os.environ["BENCHLAB_CATALOG_FORMAT"] = "v3"
    fleet = make_fleet
    store = args.dir / "store"
    baseline = args.dir / "baseline"
    ensure_fleet(store, fleet)

    print("full build from scratch ...", flush=True)
    full, reused = full_build(store, baseline, args.full_again)
    print("incremental build, +1,000 runs ...", flush=True)
    inc = incremental(store, baseline, args.rounds, fleet)
    best = best_times(store)

    print()
    print(f"fleet: {RUNS} runs, seed {SEED}, in {store}, catalog {args.format}")
    name, size = largest_tracked(store)
    print(f"largest tracked catalog file:   {size / 1e6:8.2f} MB ({name})  target <= 20 MB")
    note = " (measured earlier on this fleet; --full-again to re-measure)" if reused else ""
    print(f"full build from scratch:        {full:8.2f} s{note}")
    print(
        f"incremental build (+{ADDED}):     {statistics.median(inc):8.2f} s median of {len(inc)}"
        f"  [{', '.join(f'{t:.2f}' for t in inc)}]  target <= 10 s"
    )
    if best is None:
        print("bench best --model smollm2-135m: not measured (no `best` verb yet)")
    else:
        print(
            f"bench best --model smollm2-135m: {statistics.median(best):8.2f} s median of 5"
            f"  [{', '.join(f'{t:.2f}' for t in best)}]  target <= 1.0 s"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
