"""`bench system`: is this machine quiet enough to measure on? (like `pyperf system show`)

It prints what makes numbers swing between runs of one point (the CPU governor, turbo, the
load, swap in use, a Pi's throttling) with what to change. Unknown facts say "unknown",
never a default that could pass for a reading. Exit 0 either way: advice, not a gate.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

FACTS = (
    ("cores", "online cores"),
    ("governors", "CPU governor"),
    ("boost", "turbo/boost"),
    ("load", "load average (1, 5, 15 min)"),
    ("swap_used_mb", "swap in use (MB)"),
    ("pi_throttled", "Pi get_throttled"),
)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "system",
        help="show whether this machine is quiet enough to measure on, with advice",
        description="Show the CPU governor, turbo/boost, load average, swap in use and a "
        "Raspberry Pi's throttling state of this machine, and what to change for stable "
        "numbers. A sweep prints the same warnings for each device before it starts.",
    )
    parser.add_argument(
        "--format", choices=("table", "json"), default="table", help="table (default) or json"
    )
    parser.add_argument(
        "--root",
        metavar="DIR",
        help="read /proc and /sys under DIR (default: $BENCHLAB_SYSFS_ROOT, else /)",
    )
    parser.set_defaults(handler=run)


def _value(value: Any) -> str:
    if value is None:
        return "unknown"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


def run(args: argparse.Namespace) -> int:
    import os

    from benchlab.agent.sysstate import advice, snapshot
    from benchlab.errors import ConfigError

    if args.root is not None and not os.path.isdir(args.root):
        raise ConfigError(f"--root {args.root}: not a directory")
    state = snapshot(args.root)
    items = advice(state)
    if args.format == "json":
        print(json.dumps({"state": state, "advice": items}, indent=2, sort_keys=True))
        return 0
    width = max(len(label) for _, label in FACTS)
    for key, label in FACTS:
        print(f"{label:<{width}}  {_value(state.get(key))}")
    print()
    if not items:
        print("advice: none: the machine looks quiet")
    for item in items:
        print(f"{'WARNING' if item['level'] == 'warn' else 'advice'}: {item['message']}")
    return 0
