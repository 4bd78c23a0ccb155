#!/usr/bin/env python3
"""Judge the agent's stdlib bandwidth probe against a compiled STREAM triad.

The agent's `membw` verb must reach at least 80% of what a compiled, OpenMP STREAM triad
reaches on the same machine (ARCHITECTURE.md, "How close to the hardware"). This builds
tools/perf/stream_triad.c with gcc -O3 -fopenmp, then runs both over the same working set,
alternating, for several rounds, and prints each figure, the medians and their ratio.
OMP_WAIT_POLICY=PASSIVE keeps the triad's idle threads from spinning against the probe.

Usage: python tools/perf/membw.py [--rounds 5] [--mib 256]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchlab.agent.membw import available_memory, last_level_cache, measure, working_set


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--mib", type=int, default=0, help="MiB per buffer (0: the probe's)")
    args = parser.parse_args()
    size = (args.mib << 20) or working_set(last_level_cache(), available_memory())
    source = Path(__file__).with_name("stream_triad.c")
    with tempfile.TemporaryDirectory() as tmp:
        binary = Path(tmp) / "stream_triad"
        subprocess.run(
            ["gcc", "-O3", "-march=native", "-fopenmp", str(source), "-o", str(binary)],
            check=True,
        )
        env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")
        probe, triad = [], []
        for round_no in range(args.rounds):
            probe.append(measure(size=size)["gbs"])
            out = subprocess.run(
                [str(binary), str(size >> 20), "7"],
                capture_output=True,
                text=True,
                env=env,
                check=True,
            ).stdout.split()
            triad.append(float(out[0]))
            print(f"round {round_no + 1}: probe {probe[-1]:.1f} GB/s  triad {triad[-1]:.1f} GB/s")
    p, t = statistics.median(probe), statistics.median(triad)
    print(f"working set {size >> 20} MiB per buffer, {os.cpu_count()} CPUs")
    print(f"median probe {p:.1f} GB/s, median triad {t:.1f} GB/s, ratio {p / t:.2f}")
    return 0 if p / t >= 0.8 else 1


if __name__ == "__main__":
    sys.exit(main())
