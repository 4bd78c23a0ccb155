"""What `bench compare --by machine` and the compare page cost on a synthetic fleet.

    python tools/perf/compare.py [--runs 10000] [--repeat 3]

1. A synthetic fleet of --runs runs (tools/perf/make_fleet.py), then `bench catalog build`.
2. `bench compare --by machine --a M1 --b M2` (the two machines with the most runs) with
   `--match exact` and `--match best`, --repeat times each as a subprocess (interpreter
   start included): the first call's seconds (it segments every history and saves the step
   memo), the median of the others (they read it), and the rows printed.
3. The compare page's build-time work (`publish.pages.compare.compare_data`: a summary per
   value of each axis, from which the browser computes any pair), --repeat times in this
   process, each in a fresh render context: the median seconds, the summary files written
   and the largest one's bytes (with the two of a pair, what the page loads).
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


def time_page(store: Path, repeat: int) -> tuple[float, int, int]:
    from benchlab.layout import Store
    from benchlab.publish.context import SiteContext
    from benchlab.publish.data import load_site
    from benchlab.publish.pages.compare import compare_data

    data = load_site(Store(store))
    times, files, largest = [], 0, 0
    for _ in range(repeat):
        site = SiteContext(data, workers=1, detect=False)
        start = time.perf_counter()
        compare_data(site)
        times.append(time.perf_counter() - start)
        sizes = [len(v.encode()) for k, v in site.files.items() if k.startswith("bl/compare/")]
        files, largest = len(sizes), max(sizes, default=0)
    return statistics.median(times), files, largest


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
        seconds, files, largest = time_page(store, args.repeat)
        print(
            f"compare page summaries: median {seconds:.2f} s, {files} files, the largest "
            f"{largest / 1000:.0f} kB"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
