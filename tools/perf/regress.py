"""Step detection against asv's, on the same generated histories, with known answers.

Each draw is a catalog of daily throughput series (15, 30 or 60 runs; noise of 2 % or 5 %):
`--noise` noise-only series, spread over seven noise models (gaussian, uniform, Student t
with 3 degrees of freedom, Laplace, bimodal, a slow linear drift, occasional wedged runs 30 %
slow), and `--planted` series of each planted kind, their noise model drawn from the same
seven: a step of 10, 20 or 30 % either way a quarter of the way in (old, still open), three
runs from the end (recent, still open), and a pulse (a step, then back after max(3, n/4)
runs: a regression or improvement later undone).

Figures, per detector:
- found: planted steps with a reported step in the same direction within 2 runs;
- exact: planted steps whose first bad run is reported exactly;
- false /100: steps reported in noise-only series, per 100 series;
- extra /100: steps reported in planted series away from every planted step, per 100.

Detectors: "asv" is `asv.step_detect.detect_steps` (asv's penalised L1 segmentation,
`solve_potts_autogamma`; every segment boundary is a step) on the series as times
(1/throughput); "ours" is `benchlab.detect.regress.detect` over the whole catalog at once
(confirmed and suspect steps, the false discovery rate controlled across all series);
"before" (with `--before REV`) is `detect` as it was at that git revision.

The open-regression table asks what the home page asks: which regressions are still in
effect at the newest run. Truth: an open step down, and the fall back of an upward pulse.
"asv" is `detect_regressions(steps, 0.05)` (what `asv publish` writes to regressions.json);
"ours" is the steps with `kind == "regression"` and `open`. "fixed listed" counts the
regressions that were later undone (downward pulses) listed as open, per 100 such.

Then two shapes of noise that is not Gaussian (`benchlab.detect.noise`), per detector: "excursion",
series of 13, 15, 30 or 60 runs (1-2 % Gaussian noise) where one interior run dips 30 % and
the next comes back: steps reported per 100 series (each one false; ours reports the run as
an `outlier`, not counted); "bimodal", a box that flips between two clock speeds 15, 20 or
30 % apart (1 % noise within each) with a 15 % step down at a quarter or half of the way:
found % and exact % as above, and false steps per 100 in as many such series without a step.

Last, the fleet-scale time: `detect` over 430 series of 15 runs.

    python tools/perf/regress.py [--seed 20261203] [--before 51d7c8d]
"""

from __future__ import annotations

import argparse
import importlib
import importlib.abc
import importlib.util
import subprocess
import sys
import time
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from benchlab.detect.regress import detect
from benchlab.identity import series_id

MODELS = ("gaussian", "uniform", "t3", "laplace", "bimodal", "drift", "outliers")
KINDS = ("old", "recent", "pulse")


@dataclass
class Series:
    """One generated history and its truth: each planted step's first index and sign."""

    values: list[float]
    model: str
    planted: list[tuple[int, int]] = field(default_factory=list)
    open_regression: int | None = None
    fixed_regression: int | None = None


def noise(rng: np.random.Generator, model: str, n: int, cov: float) -> np.ndarray:
    """Relative noise of standard deviation about `cov` under one of `MODELS`."""
    if model == "gaussian":
        return rng.normal(0, cov, n)
    if model == "uniform":
        return rng.uniform(-(3**0.5) * cov, 3**0.5 * cov, n)
    if model == "t3":
        return rng.standard_t(3, n) * cov / 3**0.5
    if model == "laplace":
        return rng.laplace(0, cov / 2**0.5, n)
    if model == "bimodal":
        return rng.choice([-cov, cov], n) + rng.normal(0, cov / 4, n)
    if model == "drift":
        return rng.normal(0, cov, n) + np.linspace(0, rng.uniform(-3, 3) * cov, n)
    return np.where(rng.random(n) < 0.05, -0.3, rng.normal(0, cov, n))  # outliers


def generate(rng: np.random.Generator, kind: str) -> Series:
    n = int(rng.choice([15, 30, 60]))
    cov = float(rng.choice([0.02, 0.05]))
    model = str(rng.choice(MODELS))
    level = np.full(n, 100.0)
    size = float(rng.choice([0.1, 0.2, 0.3])) * float(rng.choice([-1, 1]))
    sign = 1 if size > 0 else -1
    series = Series([], model)
    if kind in ("old", "recent"):
        at = n // 4 if kind == "old" else n - 3
        level[at:] *= 1 + size
        series.planted = [(at, sign)]
        series.open_regression = at if sign < 0 else None
    elif kind == "pulse":
        at, back = n // 3, n // 3 + max(3, n // 4)
        level[at:back] *= 1 + size
        series.planted = [(at, sign), (back, -sign)]
        series.open_regression = back if sign > 0 else None
        series.fixed_regression = at if sign < 0 else None
    series.values = list(level * (1 + noise(rng, model, n, cov)))
    return series


def draw(seed: int, noise_only: int, planted: int) -> list[Series]:
    rng = np.random.default_rng(seed)
    out = [generate(rng, "noise") for _ in range(noise_only)]
    return out + [generate(rng, kind) for kind in KINDS for _ in range(planted)]


def entries(all_series: list[Series]) -> list[dict[str, Any]]:
    """The draw as catalog entries: one model per series, one run per day."""
    out = []
    for number, series in enumerate(all_series):
        for day, value in enumerate(series.values):
            entry = {
                "run_id": f"s{number:04d}-{day:03d}",
                "machine_id": f"m{number % 7}",
                "timestamp": f"2026-{1 + day // 28:02d}-{1 + day % 28:02d}T00:00:00Z",
                "model": f"model-{number:04d}",
                "model_id": f"model-{number:04d}",
                "precision": "q4",
                "backend": "reference",
                "mode": "decode",
                "threads": 1,
                "status": "ok",
                "tags": [],
                "peak_tok_per_sec": value,
            }
            entry["series"] = series_id(entry)
            out.append(entry)
    return out


Found = list[tuple[int, int, bool]]
"""Reported steps of one series: (first bad index, sign of the change, open regression)."""


def by_catalog(detect_fn: Callable[..., list[Any]], all_series: list[Series]) -> list[Found]:
    found: list[Found] = [[] for _ in all_series]
    for step in detect_fn(entries(all_series)):
        number, day = (int(part) for part in step.first_bad_run[1:].split("-"))
        is_open = step.kind == "regression" and getattr(step, "open", False)
        found[number].append((day, 1 if step.change > 0 else -1, is_open))
    return found


def by_asv(all_series: list[Series]) -> list[Found]:
    from asv.step_detect import detect_regressions, detect_steps

    found: list[Found] = []
    for series in all_series:
        times = [100.0 / v for v in series.values]
        steps = detect_steps(times)
        _, _, jumps = detect_regressions(steps, 0.05)
        opened = {after for _, after, _, _ in jumps or ()}
        reported = [(steps[i][0], 1 if steps[i][2] < steps[i - 1][2] else -1, False)
                    for i in range(1, len(steps))]  # fmt: skip
        reported += [(after, -1, True) for after in opened]
        found.append(reported)
    return found


def scores(all_series: list[Series], found: list[Found]) -> dict[str, float]:
    planted = hit = exact = noise_only = false = extra = stepped = 0
    opened = open_hit = open_exact = open_false = fixed = fixed_listed = 0
    for series, got in zip(all_series, found, strict=True):
        steps = [(day, sign) for day, sign, is_open in got if not is_open]
        opens = [day for day, _, is_open in got if is_open]
        if not series.planted:
            noise_only += 1
            false += len(steps)
            open_false += len(opens)
            continue
        stepped += 1
        for at, sign in series.planted:
            planted += 1
            hit += any(abs(day - at) <= 2 and s == sign for day, s in steps)
            exact += any(day == at and s == sign for day, s in steps)
        extra += sum(all(abs(day - at) > 2 for at, _ in series.planted) for day, _ in steps)
        if series.open_regression is not None:
            opened += 1
            open_hit += any(abs(day - series.open_regression) <= 2 for day in opens)
            open_exact += series.open_regression in opens
        if series.fixed_regression is not None:
            fixed += 1
            fixed_listed += any(abs(day - series.fixed_regression) <= 2 for day in opens)
    return {
        "found": 100 * hit / planted,
        "exact": 100 * exact / planted,
        "false": 100 * false / noise_only,
        "extra": 100 * extra / stepped,
        "open found": 100 * open_hit / opened,
        "open exact": 100 * open_exact / opened,
        "open false": 100 * open_false / noise_only,
        "fixed listed": 100 * fixed_listed / fixed,
    }


def ours_open(detect_fn: Callable[..., list[Any]]) -> Callable[..., list[Any]]:
    """`detect` with each step reported once as a step and, if an open regression, again."""

    def run(rows: list[dict[str, Any]]) -> list[Any]:
        out = []
        for step in detect_fn(rows):
            if getattr(step, "status", "") == "outlier":
                continue  # one run that came back: shown as an outlier, never a step
            out.append(_Reported(step.first_bad_run, step.change, step.kind, False))
            if step.kind == "regression" and getattr(step, "open", False):
                out.append(_Reported(step.first_bad_run, step.change, step.kind, True))
        return out

    return run


@dataclass
class _Reported:
    first_bad_run: str
    change: float
    kind: str
    open: bool


DETECTOR_HOMES = ("src/benchlab/detect/", "src/benchlab/")
"""Where the detector's modules lived: `detect/` today, the top level before it."""
DETECTOR_MODULES = ("history", "noise", "repeats", "segment", "cuts", "steps", "stats", "regress")
"""The detector's modules (the gates and `baseline` aside: `detect` reads neither)."""


def load_before(rev: str) -> types.ModuleType:
    """`benchlab.detect.regress` as it was at git revision `rev`, as a module of its own, with
    the detector modules it imports read from `rev` too (those `rev` lacks from today's
    code): a revision whose steps live in `cuts` and `steps` is scored with its own. A module
    the old code imports inside a function, under a name today's code also has, is today's."""
    sources: dict[str, str] = {}
    for home in DETECTOR_HOMES:
        package = "benchlab." + home.removeprefix("src/benchlab/").replace("/", ".")
        for name in DETECTOR_MODULES:
            shown = subprocess.run(
                ["git", "show", f"{rev}:{home}{name}.py"],
                check=False,
                capture_output=True,
                text=True,
            )
            if shown.returncode == 0:
                sources[f"{package}{name}"] = shown.stdout
    entry = next((n for n in ("benchlab.detect.regress", "benchlab.regress") if n in sources), None)
    if entry is None:
        raise SystemExit(f"--before {rev}: no src/benchlab/detect/regress.py (or regress.py) there")
    today = {name: sys.modules.pop(name) for name in sources if name in sys.modules}
    finder = _Revision(rev, sources)
    sys.meta_path.insert(0, finder)
    try:
        module = importlib.import_module(entry)
        for name in sources:  # those its functions import when they run, too
            importlib.import_module(name)
    finally:
        sys.meta_path.remove(finder)
        # Today's modules back where the names meet; the names today lacks (the top-level
        # era's) stay, for the imports inside the old functions.
        for name, current in today.items():
            parent, _, leaf = name.rpartition(".")
            sys.modules[name] = current
            setattr(sys.modules[parent], leaf, current)
    return module


class _Revision(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports the modules of `sources` (name to source text) from those texts."""

    def __init__(self, rev: str, sources: dict[str, str]) -> None:
        self.rev, self.sources = rev, sources

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname not in self.sources:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def exec_module(self, module: types.ModuleType) -> None:
        code = compile(self.sources[module.__name__], f"{self.rev}:{module.__name__}", "exec")
        exec(code, module.__dict__)


def report(seed: int, args: argparse.Namespace, before: types.ModuleType | None) -> None:
    all_series = draw(seed, args.noise, args.planted)
    detectors: dict[str, Callable[[], list[Found]]] = {
        "asv": lambda: by_asv(all_series),
        "ours": lambda: by_catalog(ours_open(detect), all_series),
    }
    if before is not None:
        detectors["before"] = lambda: by_catalog(ours_open(before.detect), all_series)
    print(
        f"\nseed {seed}: {args.noise} noise-only series, {args.planted} of each planted kind "
        f"({', '.join(KINDS)}), noise models {', '.join(MODELS)}"
    )
    header = ("found %", "exact %", "false/100", "extra/100",
              "open found %", "open exact %", "open false/100", "fixed listed %", "s")  # fmt: skip
    print(f"{'detector':>9} " + " ".join(f"{h:>14}" for h in header))
    for name, run in detectors.items():
        started = time.perf_counter()
        figures = scores(all_series, run())
        elapsed = time.perf_counter() - started
        cells = [f"{v:>14.1f}" for v in figures.values()] + [f"{elapsed:>14.1f}"]
        print(f"{name:>9} " + " ".join(cells))


def non_gaussian(seed: int, count: int) -> tuple[list[Series], list[Series], list[Series]]:
    """The excursion, bimodal-step and bimodal noise-only histories of one draw."""
    rng = np.random.default_rng(seed)
    dips, stepped, flat = [], [], []
    for _ in range(count):
        n = int(rng.choice([13, 15, 30, 60]))
        values = 100 * (1 + rng.normal(0, float(rng.choice([0.01, 0.02])), n))
        values[int(rng.integers(1, n - 1))] *= 0.7
        dips.append(Series(list(values), "excursion"))
        for out, at in ((stepped, None), (flat, n)):
            n = int(rng.choice([15, 30, 60]))
            at = n // int(rng.choice([2, 4])) if at is None else n
            gap = float(rng.choice([0.15, 0.2, 0.3]))
            level = np.where(np.arange(n) >= at, 0.85, 1.0)
            modes = rng.choice([0.0, gap], n)
            values = 100 * level * (1 + modes) * (1 + rng.normal(0, 0.01, n))
            out.append(Series(list(values), "bimodal", [(at, -1)] if at < n else []))
    return dips, stepped, flat


def non_gaussian_report(seed: int, count: int, before: types.ModuleType | None) -> None:
    dips, stepped, flat = non_gaussian(seed, count)
    detectors: dict[str, Callable[[list[Series]], list[Found]]] = {
        "asv": by_asv,
        "ours": lambda al: by_catalog(ours_open(detect), al),
    }
    if before is not None:
        detectors["before"] = lambda al: by_catalog(ours_open(before.detect), al)
    print(f"\nseed {seed}: {count} one-run excursions, {count} bimodal steps, {count} bimodal "
          "noise-only")  # fmt: skip
    print(f"{'detector':>9} {'excursion steps/100':>20} {'bimodal found %':>16} "
          f"{'bimodal exact %':>16} {'bimodal false/100':>18}")  # fmt: skip
    for name, run in detectors.items():
        dip_steps = sum(1 for got in run(dips) for *_, is_open in got if not is_open)
        got_steps = run(stepped)
        hit = exact = 0
        for series, got in zip(stepped, got_steps, strict=True):
            at = series.planted[0][0]
            steps = [(day, sign) for day, sign, is_open in got if not is_open]
            hit += any(abs(day - at) <= 2 and sign < 0 for day, sign in steps)
            exact += any(day == at and sign < 0 for day, sign in steps)
        false = sum(1 for got in run(flat) for *_, is_open in got if not is_open)
        print(f"{name:>9} {100 * dip_steps / count:>20.1f} {100 * hit / count:>16.1f} "
              f"{100 * exact / count:>16.1f} {100 * false / count:>18.1f}")  # fmt: skip


def fleet_time(before: types.ModuleType | None) -> None:
    """`detect` over 430 series of 15 runs (the fleet's shape): median of 3 timings."""
    rng = np.random.default_rng(1)
    rows = entries([generate(rng, "noise") for _ in range(430)])
    rows = [r for r in rows if int(r["run_id"].split("-")[1]) < 15]
    timed = {"ours": detect} | ({"before": before.detect} if before is not None else {})
    for name, fn in timed.items():
        times = []
        for _ in range(3):
            started = time.perf_counter()
            fn(rows)
            times.append(time.perf_counter() - started)
        print(f"fleet: detect over 430 series x 15 runs, {name}: {sorted(times)[1]:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, action="append", help="default: 20261203 and 7")
    parser.add_argument("--noise", type=int, default=300, help="noise-only series per draw")
    parser.add_argument("--planted", type=int, default=100, help="series per planted kind")
    parser.add_argument("--before", metavar="REV", help="also score detect at git REV")
    args = parser.parse_args()
    before = load_before(args.before) if args.before else None
    for seed in args.seed or [20261203, 7]:
        report(seed, args, before)
    for seed in args.seed or [20261203, 7]:
        non_gaussian_report(seed, args.planted * 2, before)
    print()
    fleet_time(before)


if __name__ == "__main__":
    main()
