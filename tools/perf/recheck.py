"""What re-checking the published catalog costs: `catalog.published.withheld_lines` over a
built catalog of `--runs` runs under the store's policy (the work `bench scan --tracked`
adds, and the re-check a build would do after a policy change).

    python tools/perf/recheck.py [--runs 2000] [--repeat 3]

Prints the build's seconds once and the median wall and CPU seconds of the re-check.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

# A sibling script: `python tools/perf/recheck.py` puts tools/perf first on sys.path.
import make_fleet

from benchlab.catalog.build import build
from benchlab.catalog.published import policy_version, withheld_lines
from benchlab.layout import Store
from benchlab.redact.policy import load_policy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "experiments" / "benchmark"
        root.mkdir(parents=True)
        make_fleet.make_fleet(root, args.runs)
        start = time.perf_counter()
        build(Store(root), full=True)
        print(f"build --full of {args.runs} runs: {time.perf_counter() - start:.2f} s")
        policy = load_policy(root)
        print(f"policy version: {policy_version(policy)}")
        walls, cpus, named = [], [], 0
        for _ in range(args.repeat):
            wall, cpu = time.perf_counter(), time.process_time()
            named = sum(1 for _ in withheld_lines(root, policy))
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)
        print(
            f"re-check of {args.runs} published lines: {statistics.median(walls):.2f} s wall, "
            f"{statistics.median(cpus):.2f} s CPU (median of {args.repeat}); {named} named"
        )


if __name__ == "__main__":
    main()
