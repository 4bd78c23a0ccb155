"""`bench onboard`: a new machine, detected, recorded, smoke-tested and checked."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchlab.cli.args import non_negative


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "onboard",
        help="detect a machine, record its specs, run a smoke benchmark, print the checklist",
        description="Detects CPU, GPUs, RAM, storage, OS and runtimes through the device's "
        "own agent (locally, or over the transport a sweep config declares), writes the "
        "full specs privately (runs/by-machine/ID/specs.json) and redacted specs publicly "
        "(machines/ID/specs.json), runs one tiny smoke benchmark, rebuilds the catalog and "
        "prints the machine's validation checklist. A local onboarding writes the id to "
        ".bench-machine-id at the repository root (the default of --machine-id here and of "
        "`bench run --model M`); changed specs are copied to machines/ID/history/. "
        "Exit 0 when the smoke benchmark passed.",
        epilog="examples:\n"
        "  bench onboard --interactive\n"
        "  bench onboard --machine-id new-node-01 --tags gpu,a100,linux\n"
        "  bench onboard --device pi5 --config experiments/sweeps/lab.yaml",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--interactive", action="store_true", help="ask for id, tags and cost")
    parser.add_argument(
        "--machine-id",
        help="slug naming the machine (default: the device id, else .bench-machine-id)",
    )
    parser.add_argument("--tags", default="", help="comma-separated tags, e.g. gpu,a100,linux")
    parser.add_argument(
        "--cost-per-hour", type=non_negative, help="USD per hour, for cost per token"
    )
    parser.add_argument("--device", help="a device of --config to onboard remotely")
    parser.add_argument("--config", type=Path, help="the sweep config declaring --device")
    parser.add_argument("--no-smoke", action="store_true", help="skip the smoke benchmark")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.set_defaults(handler=run_onboard)


def _ask(prompt: str, default: str) -> str:
    answer = input(f"{prompt} [{default}]: ").strip() if default else input(f"{prompt}: ")
    return answer.strip() or default


def run_onboard(args: argparse.Namespace) -> int:

    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.errors import ConfigError
    from benchlab.ids import slug
    from benchlab.layout import Store, find_store
    from benchlab.machines.onboard import onboard
    from benchlab.models import DeviceConfig
    from benchlab.sweep.progress import LineProgress

    store = Store(find_store())
    store.root.mkdir(parents=True, exist_ok=True)
    device_id, device = None, None
    if args.device or args.config:
        if not (args.device and args.config):
            raise ConfigError("--device and --config go together: the config declares the device")
        # lazy: start-up time, only the verb that runs loads its library
        from benchlab.sweep.config import load_sweep_config

        config = load_sweep_config(args.config)
        if args.device not in config.devices:
            raise ConfigError(f"{args.config}: devices: no device {args.device!r}")
        device_id, device = args.device, config.devices[args.device]
    machine_id = args.machine_id or (device.machine_id if device else None) or device_id
    if not machine_id:  # re-onboarding this clone's machine: the id it was given before
        # lazy: start-up time, only the verb that runs loads its library
        from benchlab.machines.onboard import read_machine_id

        machine_id = read_machine_id(store.root)
    tags = [t.strip() for t in args.tags.split(",") if t.strip()]
    cost = args.cost_per_hour
    if args.interactive:
        import platform

        machine_id = _ask("machine id", machine_id or slug(platform.node() or "machine"))
        tags = [
            t.strip()
            for t in _ask("tags (comma-separated)", ",".join(tags)).split(",")
            if t.strip()
        ]
        cost_text = _ask("cost per hour in USD (empty: none)", "" if cost is None else str(cost))
        try:
            cost = float(cost_text) if cost_text else None
        except ValueError:
            raise ConfigError(f"cost per hour {cost_text!r}: expected a number") from None
    if not machine_id:
        raise ConfigError("--machine-id is required (or --interactive, or --device/--config)")
    progress = LineProgress() if args.format == "table" else None
    result = onboard(
        store,
        slug(machine_id) if args.interactive else machine_id,
        device_id=device_id,
        device=device or DeviceConfig(),
        tags=tags,
        cost_per_hour=cost,
        smoke=not args.no_smoke,
        progress=progress,
    )
    smoke_ok = result.smoke is not None and result.smoke.status == "ok"
    for note in result.warnings:
        print(f"warning: {note}", file=sys.stderr)
    if args.format == "json":
        # lazy: start-up time, only the verb that runs loads its library
        from benchlab.query.render import to_json

        sys.stdout.write(
            to_json(
                {
                    "machine_id": result.specs.machine_id,
                    "smoke": None if result.smoke is None else result.smoke.status,
                    "checklist": [
                        {"check": c.text, "passed": c.passed, "detail": c.detail}
                        for c in result.checks
                    ],
                }
            )
        )
    else:
        specs = result.specs
        cpu = specs.hardware.cpu
        gpus = ", ".join(g.model for g in specs.hardware.gpu) or "none"
        print(f"machine  {specs.machine_id}")
        print(f"cpu      {cpu.model} ({cpu.cores_physical} cores / {cpu.cores_logical} threads)")
        print(f"gpu      {gpus}")
        print(f"ram      {specs.hardware.ram_gb} GB    os {specs.os.name} {specs.os.version or ''}")
        print("\nchecklist")
        for check in result.checks:
            mark = "pass" if check.passed else "FAIL"
            print(f"  [{mark}] {check.text}" + (f"  ({check.detail})" if check.detail else ""))
    return 0 if (smoke_ok or args.no_smoke) else 1
