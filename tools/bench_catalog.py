"""Shim: `python tools/bench_catalog.py ...` is `bench catalog ...`."""

import sys

from benchlab.cli import main

raise SystemExit(main(["catalog", *sys.argv[1:]]))
