"""Shim: `python tools/bench_chart.py ...` is `bench chart ...`."""

import sys

from benchlab.cli import main

raise SystemExit(main(["chart", *sys.argv[1:]]))
