"""`bench inject CONFIG AXIS=VALUE ...`: add points to a sweep's pending queue.

The points are the config's matrix with the given axes fixed (a list value is still an
axis), appended to `runs/sweeps/<experiment>/pending.jsonl` with an optional not-before
time. A running sweep of the experiment picks them up within a second once they are due;
otherwise the next `bench run` does. See benchlab.sweep.inject for the watermark.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from benchlab.cli.args import index


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "inject",
        help="add points to a sweep's pending queue (picked up by a running sweep)",
        description="Expand CONFIG's matrix with the given axes fixed and append the points "
        "to the experiment's pending.jsonl. A running `bench run` takes them when due (ahead "
        "of its own queue); otherwise the next run does.",
        epilog="example: bench inject experiments/sweeps/lab.yaml device=pi5 threads=4 --after 10m",
    )
    parser.add_argument("config", metavar="CONFIG", type=Path)
    parser.add_argument(
        "axes", metavar="AXIS=VALUE", nargs="*", help="fix a matrix axis (YAML value)"
    )
    when = parser.add_mutually_exclusive_group()
    when.add_argument("--after", metavar="DURATION", help="not before now + DURATION (10m)")
    when.add_argument("--at", metavar="ISO", help="not before this UTC time")
    parser.add_argument(
        "--repeat", type=index, default=None, help="as this repeat index (0 or more)"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from datetime import datetime, timedelta, timezone

    import yaml

    from benchlab.errors import ConfigError
    from benchlab.ids import utc_iso
    from benchlab.layout import Store, find_store
    from benchlab.sweep.budget import parse_duration
    from benchlab.sweep.config import load_sweep_config
    from benchlab.sweep.expand import expand
    from benchlab.sweep.inject import append_points, pending_path

    config = load_sweep_config(args.config)
    matrix = dict(config.matrix)
    for item in args.axes:
        name, sep, text = item.partition("=")
        if not sep or not name:
            raise ConfigError(f"{item!r}: expected AXIS=VALUE, e.g. threads=4")
        matrix[name] = yaml.safe_load(text)
    matrix.pop("repeats", None)
    variant = config.model_copy(update={"matrix": matrix})
    specs = expand(variant, where=f"{args.config} with {' '.join(args.axes)}", repeat=args.repeat)
    not_before = None
    if args.after:
        moment = datetime.now(timezone.utc) + timedelta(
            seconds=parse_duration(args.after, "--after")
        )
        not_before = utc_iso(moment)
    elif args.at:
        try:
            datetime.fromisoformat(args.at.replace("Z", "+00:00"))
        except ValueError:
            raise ConfigError(
                f"--at {args.at!r}: expected an ISO time, e.g. 2026-12-01T03:00:00Z"
            ) from None
        not_before = args.at
    path = pending_path(Store(find_store()), config.experiment)
    append_points(path, specs, not_before)
    when = f" not before {not_before}" if not_before else ""
    print(f"injected {len(specs)} point(s) into {config.experiment}{when} ({path})")
    return 0
