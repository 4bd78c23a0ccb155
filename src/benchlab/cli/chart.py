"""`bench chart` (Plotly charts of the public catalog) and `bench dashboard` (one static page).

bench chart --model smollm2-135m --precision q8 --output experiments/benchmark/charts/
bench chart --machines anthony-laptop,mac-m3pro --run-type batch --output batch.html
bench chart --model smollm2-135m --format png --output docs/throughput.png
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from benchlab.metrics import CATALOG_METRICS

KINDS = ("throughput", "decode", "scaling", "threads", "prefill-decode", "cost", "trend")
"""publish.charts.CHART_KINDS, spelled out so `bench --help` need not import plotly's side."""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "chart",
        help="draw charts of the public catalog (html, png, svg or csv)",
        description="Charts read only the public catalog and machine inventory. An --output "
        "ending in .html/.png/.svg/.csv writes one chart (the scaling chart for --run-type "
        "batch, else throughput, unless --chart says); otherwise --output is a directory "
        "that gets every chart, and plotly.min.js once beside the HTML files.",
    )
    parser.add_argument("--model", help="only this model (name or id)")
    parser.add_argument("--precision", help="only this precision, e.g. q8")
    parser.add_argument("--machines", help="only these machines, comma-separated")
    parser.add_argument("--run-type", help="only runs of this mode or tag, e.g. batch")
    parser.add_argument(
        "--chart",
        action="append",
        choices=KINDS,
        help="which chart (repeatable; default: all for a directory)",
    )
    parser.add_argument(
        "--metric",
        choices=CATALOG_METRICS,
        help="what the throughput (by machine) and threads charts draw (default: every metric "
        "the runs carry, peak aggregate first, picked on the html page; threads: decode)",
    )
    parser.add_argument("--format", choices=("html", "png", "svg", "csv"), default=None)
    parser.add_argument(
        "--output",
        type=Path,
        help="a file or a directory (default: experiments/benchmark/charts/)",
    )
    parser.set_defaults(handler=run)

    dash = subparsers.add_parser(
        "dashboard",
        help="write a one-page static HTML dashboard",
        description="Machine inventory, recent runs, top charts and filters in one static "
        "page; plotly.min.js and benchlab.js are copied beside it.",
    )
    dash.add_argument(
        "--output",
        type=Path,
        help="the HTML file (default: experiments/benchmark/dashboard/index.html)",
    )
    dash.set_defaults(handler=run_dashboard)


STATIC = ("png", "svg")
"""Formats kaleido draws in a headless Chrome: the only part of `bench chart` (and of the
pipeline) that needs a browser."""

NO_BROWSER = (
    "kaleido needs Chrome or Chromium; get one with `plotly_get_chrome` (after "
    "pip install 'benchlab[site]') or your package manager, or use --format html"
)


def _browser() -> str | None:
    """The browser kaleido would start, where it is an executable file; None where there is
    none (or no kaleido): then a static export is skipped with one line, not a traceback."""
    try:
        from choreographer.browsers.chromium import Chromium

        path = Chromium.find_browser(skip_local=False)
    except Exception:  # kaleido (and its choreographer) not installed, or a broken install
        return None
    return path if path and os.path.isfile(path) and os.access(path, os.X_OK) else None


def run(args: argparse.Namespace) -> int:
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.layout import Store, find_store
    from benchlab.publish.charts import FORMATS, write_charts
    from benchlab.publish.data import load_public
    from benchlab.query.filters import Filters

    store = Store(find_store()).require()
    machines = tuple(sorted(m.strip() for m in (args.machines or "").split(",") if m.strip()))
    filters = Filters(
        model=args.model, precision=args.precision, machines=machines, run_type=args.run_type
    )
    output = args.output or store.charts_dir
    suffix = output.suffix.lower().lstrip(".")
    fmt = args.format or suffix
    agrees = suffix == fmt or suffix not in FORMATS  # else write_charts names the mismatch
    if fmt in STATIC and agrees and _browser() is None:
        print(f"bench: note: {fmt} export skipped: {NO_BROWSER}", file=sys.stderr)
        return 0
    data = load_public(store)
    for path in write_charts(data, filters, output, args.format, args.chart, args.metric):
        print(path)
    return 0


def run_dashboard(args: argparse.Namespace) -> int:
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.layout import Store, find_store
    from benchlab.publish.dashboard import build_dashboard
    from benchlab.publish.data import load_public

    store = Store(find_store()).require()
    output = args.output or store.root / "dashboard" / "index.html"
    print(build_dashboard(load_public(store), output))
    return 0
