"""`bench inject CONFIG AXIS=VALUE ...`: add points to a sweep's pending queue.

The points are the config's matrix with the given axes fixed (a list value is still an
axis), appended to `runs/sweeps/<experiment>/pending.jsonl` with an optional not-before
time. A running sweep of the experiment picks them up within a second once they are due;
otherwise the next `bench run` does. See benchlab.sweep.inject for the watermark.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from benchlab.cli.args import index, point_cap


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
    parser.add_argument(
        "--max-points",
        type=point_cap,
        metavar="N",
        help="refuse a variant that expands to more than N points, counted before expanding "
        "(default: 10000; 0 lifts the cap)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    # lazy: start-up time, only the verb that runs loads its library
    from datetime import datetime, timedelta, timezone

    from benchlab.errors import ConfigError
    from benchlab.ids import utc_iso
    from benchlab.layout import Store, find_store
    from benchlab.runtime.bounded_yaml import load_yaml_bounded, read_config_data
    from benchlab.sweep.budget import parse_duration
    from benchlab.sweep.config import parse_sweep_config
    from benchlab.sweep.expand import MAX_POINTS, expand
    from benchlab.sweep.inject import append_points, pending_path

    # The axes are laid over the config's own text, and the variant is checked as a whole
    # config: its numbers, params and lines by the writer contract, its points counted
    # before any is made (ARCHITECTURE.md, The catalog: every input is bounded).
    data = read_config_data(args.config)
    matrix = dict(data.get("matrix") or {}) if isinstance(data, dict) else {}
    for item in args.axes:
        name, sep, text = item.partition("=")
        if not sep or not name:
            raise ConfigError(f"{item!r}: expected AXIS=VALUE, e.g. threads=4")
        matrix[name] = load_yaml_bounded(text, item)
    matrix.pop("repeats", None)
    shown = " ".join(a if len(a) <= 40 else f"{a[:37]}..." for a in args.axes)
    where = f"{args.config} with {shown}" if args.axes else str(args.config)
    cap = MAX_POINTS if args.max_points is None else args.max_points or None
    config = parse_sweep_config(
        {**data, "matrix": matrix} if isinstance(data, dict) else data, where, max_points=cap
    )
    specs = expand(config, where=where, repeat=args.repeat)
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
