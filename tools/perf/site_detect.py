"""What judging every metric costs the site: its detector pass over each series' headline
metric alone, against the same pass over every metric the runs carry (as it runs).

    python tools/perf/site_detect.py [--runs 1000 10000] [--repeat 3]

For each size, a synthetic fleet (tools/perf/make_fleet.py, then `bench catalog build`), its
ok histories grouped as the site groups them, then `publish.detection.detect_per_series` in
one process, `--repeat` times each way: "headline" with each series read in its headline
metric only (`metrics.HEADLINE_ORDER`), "all metrics" as the site runs it. Prints the
medians, their ratio, and the steps each finds.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import benchlab.publish.detection as detection
from benchlab.layout import Store
from benchlab.metrics import HEADLINE_ORDER
from benchlab.publish.context import Groups
from benchlab.publish.data import load_public


def make_store(root: Path, runs: int) -> Path:
    """tools/perf/site.py's fleet (loaded by path: `site` is also a standard module)."""
    spec = importlib.util.spec_from_file_location("perf_site", Path(__file__).with_name("site.py"))
    assert spec is not None and spec.loader is not None
    module: Any = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    store: Path = module.make_store(root, runs)
    return store


def _timed(ok_of: dict, repeat: int) -> tuple[float, int, int]:
    """The median seconds of `detect_per_series`, its steps, and those in a metric that is
    not the series' first."""
    times = []
    steps: list = []
    for _ in range(repeat):
        start = time.perf_counter()
        steps, _ = detection.detect_per_series(ok_of, workers=1)
        times.append(time.perf_counter() - start)
    firsts = {s.series: s.metric for s in reversed(steps)}
    return statistics.median(times), len(steps), sum(s.metric != firsts[s.series] for s in steps)


def _headline(real: Any, runs: Any, _metric: Any) -> Any:
    """`raw_steps` over each series' headline metric only."""
    return real(runs, HEADLINE_ORDER)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    print("| runs | series | headline s | all metrics s | ratio | steps | in other metrics |")
    print("|--:|--:|--:|--:|--:|--:|--:|")
    for runs in args.runs:
        with tempfile.TemporaryDirectory() as tmp:
            store = make_store(Path(tmp), runs)
            ok_of = Groups.of(load_public(Store(store)).runs).ok_of
            full = _timed(ok_of, args.repeat)
            real = detection.raw_steps
            detection.raw_steps = functools.partial(_headline, real)  # type: ignore[assignment]
            try:
                headline = _timed(ok_of, args.repeat)
            finally:
                detection.raw_steps = real  # type: ignore[assignment]
        print(f"| {runs:,} | {len(ok_of):,} | {headline[0]:.2f} | {full[0]:.2f} | "
              f"{full[0] / headline[0]:.2f} | {full[1]} | {full[2]} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
