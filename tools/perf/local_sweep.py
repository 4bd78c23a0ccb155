#!/usr/bin/env python3
"""Prove the embedded default sweep's budget: `experiments/sweeps/local.yaml` < 3 minutes.

Runs `bench run experiments/sweeps/local.yaml --fresh --quiet` into a throw-away store
N times (default 1: each run costs a minute or two of both cores), then prints the median
wall time, the per-point durations, the sequential runner's overhead (wall time minus the
time the benchmarks themselves ran) and how close decode came to the machine's own matvec
bandwidth bound. Exits 1 when the median misses the budget.

Usage: python tools/perf/local_sweep.py [--runs 1] [--config experiments/sweeps/local.yaml]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BUDGET_S = 180.0
REPO = Path(__file__).resolve().parents[2]


def one_run(config: Path) -> tuple[float, list[dict]]:
    with tempfile.TemporaryDirectory(prefix="benchlab-perf-") as store:
        env = {**os.environ, "BENCHLAB_STORE": store, "DVC_NO_ANALYTICS": "1"}
        began = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "benchlab", "run", str(config), "--fresh", "--quiet"],
            env=env,
            check=True,
            timeout=BUDGET_S * 3,
            stdout=subprocess.DEVNULL,
        )
        wall = time.perf_counter() - began
        records = [
            json.loads(path.read_text())
            for path in sorted(Path(store).glob("runs/by-machine/*/*/record.json"))
        ]
    return wall, records


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--config", type=Path, default=REPO / "experiments/sweeps/local.yaml")
    args = parser.parse_args()
    walls: list[float] = []
    for index in range(args.runs):
        wall, records = one_run(args.config)
        walls.append(wall)
        busy = sum(r["timings"]["duration_s"] or 0 for r in records)
        print(
            f"run {index + 1}: {len(records)} point(s) in {wall:.1f} s wall, "
            f"{busy:.1f} s inside the benchmarks, {wall - busy:.1f} s overhead"
        )
        for r in records:
            spec, metrics = r["spec"], r["metrics"]
            fraction = metrics.get("bandwidth_bound_fraction")
            print(
                f"  {spec['model']:>13} {spec['precision']:>3} t{spec['threads']}: "
                f"{r['timings']['duration_s']:6.1f} s, {r['status']}, decode "
                f"{metrics.get('decode_tok_per_sec', float('nan')):8.2f} t/s, "
                f"bandwidth bound fraction {fraction if fraction is not None else 'n/a'}"
            )
    median = statistics.median(walls)
    verdict = "ok" if median < BUDGET_S else "MISSED"
    print(
        f"median wall time {median:.1f} s over {len(walls)} run(s); budget {BUDGET_S:.0f} s: "
        f"{verdict} ({median / BUDGET_S:.2f} of the budget, {os.cpu_count()} CPU(s))"
    )
    return 0 if median < BUDGET_S else 1


if __name__ == "__main__":
    raise SystemExit(main())
