"""What `bench compare --by machine` and the compare page cost on a synthetic fleet.

    python tools/perf/compare.py [--runs 10000] [--repeat 3]

1. A synthetic fleet of --runs runs (tools/perf/make_fleet.py), then `bench catalog build`.
2. `bench compare --by machine --a M1 --b M2` (the two machines with the most runs) with
   `--match exact` and `--match best`, --repeat times each as a subprocess (interpreter
   start included): the first call's seconds (it segments every history and saves the step
   memo), the median of the others (they read it), and the rows printed.
3. The compare page's computation on the machine axis (`query.compare.gather`, then
   `compare_pair` for every pair of the offered machines, both matches, no memo kept between
   repeats: what `publish.pages.compare` does before it writes the scripts), --repeat times
   in this process: the median seconds, the
   pairs, the rows in all and in the largest pair, and that pair's script size.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def make_store(root: Path, runs: int) -> Path:
    store = root / "experiments" / "benchmark"
    fleet = REPO / "tools" / "perf" / "make_fleet.py"
    subprocess.run(
        [sys.executable, str(fleet), "--runs", str(runs), "--out", str(store)],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        [sys.executable, "-m", "benchlab", "--store", str(store), "catalog", "build"],
        check=True,
        capture_output=True,
    )
    return store


def time_cli(store: Path, a: str, b: str, match: str, repeat: int) -> tuple[float, float, int]:
    """(first call, median of the calls after it, rows): the first segments every history
    and saves the step memo (`query.level`); the others read it."""
    argv = [sys.executable, "-m", "benchlab", "--store", str(store), "compare", "--by", "machine"]
    argv += ["--a", a, "--b", b, "--match", match, "--format", "json"]
    times, rows = [], 0
    for _ in range(repeat):
        start = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        rows = len(json.loads(done.stdout)["rows"]) if done.returncode == 0 else 0
    return times[0], statistics.median(times[1:] or times), rows


def time_page(store: Path, repeat: int) -> tuple[float, int, int, int, int]:
    from benchlab.catalog.read import load_catalog
    from benchlab.publish.pages.compare import COMPARE_VALUES, MODES
    from benchlab.query.compare import compare_pair, gather

    runs = [r for r in load_catalog(store / "catalog.json").runs if r.get("status") == "ok"]
    counts = Counter(r["machine_id"] for r in runs)
    times, pairs, rows, largest, size = [], 0, 0, 0, 0
    for _ in range(repeat):
        start = time.perf_counter()
        sides = gather(runs, "machine")
        chosen = sorted(sorted(sides.present, key=lambda v: (-counts[v], v))[:COMPARE_VALUES])
        results = [
            compare_pair(sides, a, b, mode)
            for mode in MODES["machine"]
            for i, a in enumerate(chosen)
            for b in chosen[i + 1 :]
        ]
        times.append(time.perf_counter() - start)
        pairs = len(results)
        rows = sum(len(r.rows) for r in results)
        biggest = max(results, key=lambda r: len(r.rows))
        largest = len(biggest.rows)
        size = len(json.dumps(biggest.as_json(), default=str))
    return statistics.median(times), pairs, rows, largest, size


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bl-perf-compare-") as tmp:
        store = make_store(Path(tmp), args.runs)
        from benchlab.catalog.read import load_catalog

        counts = Counter(r["machine_id"] for r in load_catalog(store / "catalog.json").runs)
        (a, _), (b, _) = counts.most_common(2)
        print(f"fleet: {args.runs} runs, {len(counts)} machines; A = {a}, B = {b}")
        for match in ("exact", "best"):
            first, again, rows = time_cli(store, a, b, match, args.repeat)
            print(
                f"bench compare --by machine --match {match}: first {first:.2f} s, "
                f"then median {again:.2f} s (step memo), {rows} rows"
            )
        seconds, pairs, rows, largest, size = time_page(store, args.repeat)
        print(
            f"compare page computation: median {seconds:.2f} s for {pairs} pairs, {rows} rows "
            f"in all, largest pair {largest} rows (~{size / 1000:.0f} kB as JSON, stats included)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
