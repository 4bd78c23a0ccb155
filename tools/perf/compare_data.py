"""The Compare page's data files at scale: their count and the heaviest one's size.

    python tools/perf/compare_data.py --store /tmp/fleet-100k/experiments/benchmark
    python tools/perf/compare_data.py --runs 100000     # a fleet made and built here first

The page loads the index it embeds and two summary files, `bl/compare/<axis>-<i>.js` (one per
axis value: ARCHITECTURE.md, Compare), whichever pair is picked: the heaviest of those files
is what a visitor downloads at most for one side (page weight: tools/perf/site.py). The
files are written by the same function the site build runs (`pages.compare.compare_data`),
on the data the build reads (`publish.data.load_site`), without rendering the other pages.
Target: the heaviest file under 1.5 MB at 100,000 runs. Prints the files per axis, the
heaviest, the total, and the time `compare_data` took (wall and CPU, this process).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LIMIT_BYTES = 1_500_000


def make_store(root: Path, runs: int) -> Path:
    store = root / "experiments" / "benchmark"
    fleet = REPO / "tools" / "perf" / "make_fleet.py"
    subprocess.run([sys.executable, str(fleet), "--runs", str(runs), "--out", str(store)],
                   check=True, capture_output=True)  # fmt: skip
    subprocess.run([sys.executable, "-m", "benchlab", "--store", str(store), "catalog", "build"],
                   check=True, capture_output=True)  # fmt: skip
    return store


def measure(store: Path) -> bool:
    from benchlab.layout import Store
    from benchlab.publish.context import SiteContext
    from benchlab.publish.data import load_site
    from benchlab.publish.pages.compare import compare_data

    data = load_site(Store(store))
    site = SiteContext(data, workers=1, detect=False)
    wall, cpu = time.perf_counter(), time.process_time()
    index = compare_data(site)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    files = site.files.items()
    sizes = {name: len(text.encode()) for name, text in files if name.startswith("bl/compare/")}
    print(f"{store}: {len(data.runs)} runs, {len(site.groups.ok_of)} series")
    for axis in index["axes"]:
        mine = [v for k, v in sizes.items() if k.startswith(f"bl/compare/{axis['axis']}-")]
        print(
            f"  {axis['axis']}: {len(axis['values'])} values, {len(mine)} files, "
            f"largest {max(mine) / 1e6:.3f} MB, total {sum(mine) / 1e6:.2f} MB"
        )
    name = max(sizes, key=lambda k: sizes[k]) if sizes else "-"
    heaviest = sizes.get(name, 0)
    ok = heaviest <= LIMIT_BYTES
    print(
        f"heaviest compare data file: {name} {heaviest / 1e6:.3f} MB "
        f"(target <= {LIMIT_BYTES / 1e6:.1f} MB: {'OK' if ok else 'FAIL'}); "
        f"{len(sizes)} files, {sum(sizes.values()) / 1e6:.2f} MB in all; "
        f"compare_data {wall:.2f} s wall, {cpu:.2f} s CPU"
    )
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, help="a store with a built catalog")
    parser.add_argument("--runs", type=int, default=100_000, help="without --store: fleet size")
    args = parser.parse_args(argv)
    if args.store is not None:
        return 0 if measure(args.store) else 1
    with tempfile.TemporaryDirectory(prefix="benchlab-perf-compare-") as tmp:
        return 0 if measure(make_store(Path(tmp), args.runs)) else 1


if __name__ == "__main__":
    raise SystemExit(main())
