"""Shim: `python tools/bench_migrate.py ...` is `bench migrate ...`."""

import sys

from benchlab.cli import main

raise SystemExit(main(["migrate", *sys.argv[1:]]))
