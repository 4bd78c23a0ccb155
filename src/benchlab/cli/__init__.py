"""The `bench` command. Each verb lives in its own module with `register(subparsers)`;
this module wires them up and is the only place that turns an error into a message and an
exit code.

Verb modules import only argparse at module level and import the library inside their
handler, so that `bench best` does not pay for plotly, fabric or mkdocs at start-up.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from benchlab import __version__
from benchlab.errors import BenchlabError

VERB_MODULES = (
    "query",
    "compare",
    "catalog",
    "schemas",
    "run",
    "chart",
    "site",
    "scan",
    "onboard",
    "machines",
    "migrate",
    "regression",
    "devices",
    "export",
    "stop",
    "inject",
    "outlier",
    "system",
)
"""Modules under benchlab.cli, each registering one verb or a group of verbs."""


def build_parser() -> argparse.ArgumentParser:
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.cli.args import OneLineParser

    parser = OneLineParser(
        prog="bench",
        description="benchlab: run benchmark sweeps across a fleet, keep raw results private, "
        "publish a redacted catalog, and ask it questions.",
        epilog="Run `bench VERB --help` for the options of each verb.",
    )
    parser.add_argument("--version", action="version", version=f"benchlab {__version__}")
    parser.add_argument(
        "--store",
        metavar="DIR",
        help="the store root (default: $BENCHLAB_STORE, else experiments/benchmark "
        "in this or a parent directory)",
    )
    subparsers = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=OneLineParser)
    for name in VERB_MODULES:
        importlib.import_module(f"benchlab.cli.{name}").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code so tests can call `main([...])` in-process.

    stdout and stderr escape control characters for the whole verb (`textout.SafeStream`;
    ARCHITECTURE.md, One reader and one writer path): a value read from sysfs, a tool or a
    pulled catalog line never drives the terminal, whichever verb prints it."""
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.textout import SafeStream

    out, err = sys.stdout, sys.stderr
    sys.stdout = SafeStream(out)
    sys.stderr = SafeStream(err)
    try:
        return _main(argv)
    finally:
        sys.stdout, sys.stderr = out, err


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        if exc.code == 2:  # a refused flag value: its one line is printed, nothing ran
            return 2
        raise  # --help, --version
    if args.store:
        os.environ["BENCHLAB_STORE"] = args.store
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    # lazy: start-up time, the layout is loaded only once a verb is about to run
    from benchlab.layout import find_store, guard_store

    try:
        # Every write under the store goes through the guarded writer (ARCHITECTURE.md,
        # One reader and one writer path), whichever verb and module makes it.
        with guard_store(find_store()):
            return int(handler(args) or 0)
    except BenchlabError as exc:
        print(f"bench: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("bench: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # A reader such as `head` went away; say nothing more.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
