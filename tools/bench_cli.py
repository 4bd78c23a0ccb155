"""Shim: `python tools/bench_cli.py VERB ...` is `bench VERB ...`."""

from benchlab.cli import main

if __name__ == "__main__":  # a spawned worker (macOS) imports this file again: no re-run
    raise SystemExit(main())
