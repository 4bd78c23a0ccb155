"""Detection rate and false alarms of `benchlab.regress.find_steps` on synthetic histories.

Each history has 40 runs of a throughput with Gaussian noise of a given coefficient of
variation; stepped histories drop by the given size at run 20. A step counts as detected
when a step is found within 2 runs of the true one. False alarms are counted on step-free
histories, per 1,000 runs. Side by side: a conbench-style distribution check (each run's
z-score against the 10 runs before it, flagged at |z| > 5), applied run by run.

    python tools/perf/regress.py [--trials 200]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchlab.regress import find_steps

LENGTH, AT = 40, 20
STEPS = (0.02, 0.05, 0.10, 0.20, 0.30)
NOISE = (0.01, 0.02, 0.05, 0.10)


def history(rng: np.random.Generator, step: float, cov: float) -> list[float]:
    level = np.where(np.arange(LENGTH) < AT, 100.0, 100.0 * (1 - step))
    return list(level * (1 + rng.normal(0, cov, LENGTH)))


def zscore_flags(values: list[float], lookback: int = 10, threshold: float = 5.0) -> list[int]:
    """Indices a conbench-style check flags: |z| of a run against the `lookback` before it."""
    flags = []
    for index in range(lookback, len(values)):
        window = np.asarray(values[index - lookback : index])
        spread = window.std(ddof=1)
        if spread > 0 and abs(values[index] - window.mean()) / spread > threshold:
            flags.append(index)
    return flags


def table(title: str, detector, rng: np.random.Generator, trials: int) -> None:
    print(f"\n{title}: detection rate (%), {trials} histories of {LENGTH} runs, step at {AT}")
    print("step \\ CoV " + "".join(f"{c:>8.0%}" for c in NOISE))
    for step in STEPS:
        cells = []
        for cov in NOISE:
            hits = sum(
                any(abs(i - AT) <= 2 for i in detector(history(rng, step, cov)))
                for _ in range(trials)
            )
            cells.append(100 * hits / trials)
        print(f"{step:>10.0%} " + "".join(f"{c:>8.1f}" for c in cells))
    alarms = [
        1000 * sum(len(detector(history(rng, 0.0, cov))) for _ in range(trials)) / (trials * LENGTH)
        for cov in NOISE
    ]
    print("false alarms per 1,000 step-free runs")
    print("      none " + "".join(f"{a:>8.2f}" for a in alarms))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200)
    args = parser.parse_args()
    rng = np.random.default_rng(20261201)
    started = time.perf_counter()
    table("benchlab (rank scan + permutation test)",
          lambda v: [i for i, _ in find_steps(v)], rng, args.trials)  # fmt: skip
    table("conbench-style z-score, lookback 10, |z| > 5", zscore_flags, rng, args.trials)
    print(f"\n{time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
