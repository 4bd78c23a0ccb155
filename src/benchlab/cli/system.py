"""`bench system`: is this machine quiet enough to measure on? (like `pyperf system show`)

It prints what makes numbers swing between runs of one point (the CPU governor, turbo, the
load, swap in use, a Pi's throttling) with what to change. Unknown facts say "unknown",
never a default that could pass for a reading. Exit 0 either way: advice, not a gate.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

FACTS = (
    ("cores", "online cores"),
    ("governors", "CPU governor"),
    ("boost", "turbo/boost"),
    ("load", "load average (1, 5, 15 min)"),
    ("swap_used_mb", "swap in use (MB)"),
    ("pi_throttled", "Pi get_throttled"),
)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
    parser.add_argument(
        "--device",
        metavar="NAME",
        help="ask this device of --config (through its agent, as a sweep does) instead of "
        "this machine",
    )
    parser.add_argument("--config", metavar="FILE", help="the sweep config naming --device")
    parser.set_defaults(handler=run)


def _value(value: Any) -> str:
    if value is None:
        return "unknown"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


def _ask_device(config_path: str, device: str) -> tuple[dict[str, Any], list[dict[str, str]]]:
    """The state and advice a device's own agent reports (DeviceError where it cannot)."""
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.devices import open_transport
    from benchlab.errors import ConfigError, DeviceError
    from benchlab.sweep.config import load_sweep_config
    from benchlab.sweep.placeholders import resolve_device, worker_instance_id

    config = load_sweep_config(config_path)
    if device not in config.devices:
        known = ", ".join(sorted(config.devices))
        raise ConfigError(f"{config_path}: devices: no device {device!r} (known: {known})")
    resolved = resolve_device(
        config.devices[device],
        device=device,
        experiment=config.experiment,
        worker=worker_instance_id(device, 0),
    )
    with open_transport(device, resolved) as transport:
        answer = transport.call("system", None, timeout=60.0)
    if not isinstance(answer, dict) or not isinstance(answer.get("state"), dict):
        raise DeviceError(f"device {device!r}: the agent's system answer is malformed", device)
    return answer["state"], list(answer.get("advice") or [])


def _figures() -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """This clone's machine's recorded memory bandwidth and host peak compute (`bench
    machines measure`), each None where there is no store, no machine id or no figure:
    `bench system` is advice and never fails for want of one."""
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.errors import BenchlabError
    from benchlab.layout import Store, find_store, read_model
    from benchlab.machines.onboard import read_machine_id
    from benchlab.models import MachineSpecs

    try:
        store = Store(find_store())
        # Without a machine id, the demo machine the default sweep runs here as `local`.
        machine = read_machine_id(store.root) or "local"
        if not store.private_specs(machine).is_file():
            return None, None
        hardware = read_model(store.private_specs(machine), MachineSpecs).hardware
    except BenchlabError:
        return None, None
    memory, peak = hardware.mem_bandwidth, hardware.peak_tflops
    return (memory.model_dump() if memory else None, peak.model_dump() if peak else None)


def run(args: argparse.Namespace) -> int:
    # lazy: start-up time, only the verb that runs loads its library
    import os

    from benchlab.agent.sysstate import advice, snapshot
    from benchlab.errors import ConfigError
    from benchlab.query.render import to_json

    if args.root is not None and not os.path.isdir(args.root):
        raise ConfigError(f"--root {args.root}: not a directory")
    if (args.device is None) != (args.config is None):
        raise ConfigError("--device and --config go together (a device of a sweep config)")
    if args.device is not None:
        state, items = _ask_device(args.config, args.device)
    else:
        state = snapshot(args.root)
        items = advice(state)
    here = args.device is None and args.root is None
    figure, peak = _figures() if here else (None, None)
    if args.format == "json":
        answer = {"state": state, "advice": items, "mem_bandwidth": figure, "peak_tflops": peak}
        sys.stdout.write(to_json(answer))  # NaN: null
        return 0
    width = max(len(label) for _, label in FACTS)
    for key, label in FACTS:
        print(f"{label:<{width}}  {_value(state.get(key))}")
    if figure is not None:
        # lazy: start-up time, only the verb that runs loads its library
        from benchlab.machines.bandwidth import label as bandwidth_label
        from benchlab.models import BandwidthFigure

        shown = bandwidth_label(BandwidthFigure.model_validate(figure))
        print(f"{'memory bandwidth':<{width}}  {shown}")
    elif here:
        print(f"{'memory bandwidth':<{width}}  not measured (bench machines measure)")
    if peak is not None:
        # lazy: start-up time, only the verb that runs loads its library
        from benchlab.machines.compute import label as compute_label
        from benchlab.models import ComputeFigure

        shown = compute_label(ComputeFigure.model_validate(peak))
        print(f"{'peak compute':<{width}}  {shown}")
    elif here:
        print(f"{'peak compute':<{width}}  not measured (bench machines measure)")
    print()
    if not items:
        print("advice: none: the machine looks quiet")
    for item in items:
        print(f"{'WARNING' if item['level'] == 'warn' else 'advice'}: {item['message']}")
    return 0
