"""Shim: `python tools/bench_run.py ...` is `bench run ...`."""

import sys

from benchlab.cli import main

raise SystemExit(main(["run", *sys.argv[1:]]))
