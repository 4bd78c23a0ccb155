"""Shim: `python tools/bench_onboard.py ...` is `bench onboard ...`."""

import sys

from benchlab.cli import main

raise SystemExit(main(["onboard", *sys.argv[1:]]))
