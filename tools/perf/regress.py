"""Detection rate and false alarms of `benchlab.regress.find_steps` on synthetic histories.

Each history has 40 runs of a throughput with Gaussian noise of a given coefficient of
variation; stepped histories drop by the given size at run 20. A step counts as detected
when a step is found within 2 runs of the true one. False alarms are counted on step-free
histories, per 1,000 runs. Side by side: a conbench-style distribution check (each run's
z-score against the 10 runs before it, flagged at |z| > 5), applied run by run.

Then the fleet case the site must answer: a fleet of ~3,000 runs spread over ~220 series
holds ~13 runs per series with uniform +-10 % noise; one machine's series take a -28 % step
with only k runs after it. "before" is the detector as it was (alpha 0.01, no effect-size
gate, no tail check: `min_effect=0, suspects=False`); "after" is today's default (confirmed
steps need 1.5 robust deviations; a recent step with few runs after it is `suspect`).
False alarms on step-free 13-run series are split into confirmed and suspect.

    python tools/perf/regress.py [--trials 200]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchlab.regress import detect, find_steps

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


FLEET_LENGTH = 13
FLEET_STEP = 0.28
TAILS = (1, 2, 3, 5, 8)


def fleet_history(rng: np.random.Generator, runs_after: int, step: float) -> list[float]:
    """A fleet-sized series: uniform +-10 % noise, the step `runs_after` runs from the end."""
    noise = rng.uniform(0.9, 1.1, FLEET_LENGTH)
    level = np.where(np.arange(FLEET_LENGTH) < FLEET_LENGTH - runs_after, 100.0, 100 * (1 - step))
    return list(level * noise)


def _entries(values: list[float]) -> list[dict]:
    return [
        {
            "run_id": f"r{i:03d}",
            "series": "s1",
            "machine_id": "m",
            "model": "x",
            "precision": "q4",
            "timestamp": f"2026-01-{1 + i:02d}T00:00:00Z",
            "status": "ok",
            "peak_tok_per_sec": v,
        }
        for i, v in enumerate(values)
    ]


def fleet_table(rng: np.random.Generator, trials: int) -> None:
    """Found (confirmed or suspect, at the right run) and false alarms, before and after."""
    settings = {
        "before": {"min_effect": 0.0, "suspects": False},
        "after": {},
    }
    print(
        f"\nfleet case: {FLEET_LENGTH}-run series, uniform +-10% noise, "
        f"-{FLEET_STEP:.0%} step k runs from the end, {trials} trials"
    )
    print("found (%)  k = " + "".join(f"{k:>7d}" for k in TAILS) + "   false alarms / 1,000 runs")
    for name, kw in settings.items():
        cells = []
        for k in TAILS:
            hits = 0
            for _ in range(trials):
                steps = detect(_entries(fleet_history(rng, k, FLEET_STEP)), **kw)
                at = FLEET_LENGTH - k
                hits += any(
                    s.kind == "regression" and abs(int(s.first_bad_run[1:]) - at) <= 1
                    for s in steps
                )
            cells.append(100 * hits / trials)
        confirmed = suspect = 0
        for _ in range(trials):
            for s in detect(_entries(fleet_history(rng, 0, 0.0)), **kw):
                confirmed += s.status == "confirmed"
                suspect += s.status == "suspect"
        scale = 1000 / (trials * FLEET_LENGTH)
        print(
            f"{name:>9}       "
            + "".join(f"{c:>7.1f}" for c in cells)
            + f"   confirmed {confirmed * scale:.2f}, suspect {suspect * scale:.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200)
    args = parser.parse_args()
    rng = np.random.default_rng(20261201)
    started = time.perf_counter()
    table("benchlab (rank scan + permutation test)",
          lambda v: [i for i, _ in find_steps(v)], rng, args.trials)  # fmt: skip
    table("conbench-style z-score, lookback 10, |z| > 5", zscore_flags, rng, args.trials)
    fleet_table(rng, args.trials)
    print(f"\n{time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
