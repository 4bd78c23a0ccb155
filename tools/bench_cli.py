"""Shim: `python tools/bench_cli.py VERB ...` is `bench VERB ...`."""

from benchlab.cli import main

raise SystemExit(main())
