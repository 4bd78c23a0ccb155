"""`bench machines`: the fleet with its checklist, memory bandwidth and peak compute, and the
ways a machine gets a figure benchlab did not look up itself (`set`, `measure`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from benchlab.cli.args import positive

FIGURE_LIMIT = 100_000
"""The largest GB/s or TFLOP/s a figure may state (`models.BandwidthFigure`, `ComputeFigure`)."""


def figure(text: str) -> float:
    """A declared figure: a finite number above 0, at most FIGURE_LIMIT."""
    value = positive(text)
    if value > FIGURE_LIMIT:
        raise argparse.ArgumentTypeError(
            f"expected a number above 0, at most {FIGURE_LIMIT:,}, got {text!r}"
        )
    return value


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    machines = subparsers.add_parser(
        "machines",
        help="list the fleet's machines with their checklist, memory bandwidth and compute",
        description="Machines of the inventory (machines/catalog.json) and of this clone's "
        "private specs, each with its validation checklist and the memory bandwidth decode "
        "is bound by, with where that figure came from: measured (the agent's probe), "
        "declared (`bench machines set`) or spec (the spec-sheet table, from the GPU or SoC "
        "name), and the peak compute prefill is bound by: measured (the CPU's float32 GEMM "
        "rate), declared, or spec (a GPU's dense FP16 rate). MBU, "
        "MFU and the physics check in `bench best` use these figures.",
        epilog="examples:\n"
        "  bench machines\n"
        "  bench machines set m2-max-studio --mem-bandwidth 400\n"
        "  bench machines set lab-4090 --gpu --peak-tflops 330.3\n"
        "  bench machines measure\n"
        "  bench machines measure --device pi5 --config experiments/sweeps/lab.yaml",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    machines.add_argument("--format", choices=("table", "json", "csv", "markdown"), default="table")
    machines.set_defaults(handler=run_list)
    actions = machines.add_subparsers(dest="action", metavar="{set,measure}")
    setter = actions.add_parser(
        "set",
        help="declare a machine's memory bandwidth or peak compute",
        description="Record a declared memory bandwidth and/or peak compute in the machine's "
        "private specs (runs/by-machine/ID/specs.json; the next catalog build publishes it). "
        "A declared figure outranks a measured one and the spec sheet's, and survives "
        "re-onboarding.",
    )
    setter.add_argument("machine_id", metavar="ID")
    setter.add_argument(
        "--mem-bandwidth", type=figure, metavar="GBPS", help="GB/s (10**9 bytes per second)"
    )
    setter.add_argument(
        "--peak-tflops", type=figure, metavar="TFLOPS",
        help="peak dense FP16 TFLOP/s, without sparsity (10**12 FLOPs per second)",
    )  # fmt: skip
    setter.add_argument(
        "--gpu", action="store_true", help="the figures are the first GPU's (its memory's)"
    )
    setter.set_defaults(handler=run_set)
    measure = actions.add_parser(
        "measure",
        help="measure memory bandwidth and CPU compute with the agent's probes, record them",
        description="Run the agent's `membw` probe (a multi-threaded copy over four times "
        "the last-level cache, best of 7) and its `gemm` probe (a float32 matrix multiply "
        "in numpy, best of 5: the CPU's practical BLAS rate, where numpy is installed) on "
        "this machine, or on --device of --config through its agent, and record the "
        "figures in the machine's private specs.",
    )
    measure.add_argument("--machine-id", help="default: .bench-machine-id, or the device's id")
    measure.add_argument("--device", help="a device of --config to measure through its agent")
    measure.add_argument("--config", type=Path, help="the sweep config declaring --device")
    measure.add_argument("--format", choices=("table", "json"), default="table")
    measure.set_defaults(handler=run_measure)


def run_list(args: argparse.Namespace) -> int:
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.catalog.inventory import machine_specs
    from benchlab.layout import Store, find_store, read_json
    from benchlab.machines import compute
    from benchlab.machines.bandwidth import from_spec_sheet, label
    from benchlab.machines.onboard import CHECKLIST, checklist
    from benchlab.query.render import Column, Section, emit

    store = Store(find_store()).require()
    ids: set[str] = set()
    if store.inventory_path.is_file():
        ids |= set(read_json(store.inventory_path).get("machines", {}))
    specs = machine_specs(store)
    ids |= set(specs)
    rows = []
    for machine in sorted(ids):
        checks = checklist(store, machine)
        row: dict[str, Any] = {"machine": machine, "ready": all(c.passed for c in checks)}
        row.update({key: c.passed for (key, _), c in zip(CHECKLIST, checks, strict=True)})
        hardware = specs[machine].hardware if machine in specs else None
        # The figure a run is judged by: the recorded one, else the spec sheet's.
        host = (hardware.mem_bandwidth or from_spec_sheet(hardware.cpu.model)) if hardware else None
        gpu = None
        if hardware and hardware.gpu:
            gpu = hardware.gpu[0].mem_bandwidth or from_spec_sheet(hardware.gpu[0].model)
        row["mem_bandwidth"] = label(host)
        row["gpu_mem_bandwidth"] = label(gpu)
        # Peak compute: the host's measured or declared figure; the first GPU's, else the
        # spec sheet's.
        host_peak = hardware.peak_tflops if hardware else None
        gpu_peak = None
        if hardware and hardware.gpu:
            gpu_peak = hardware.gpu[0].peak_tflops or compute.from_spec_sheet(hardware.gpu[0].model)
        row["peak_tflops"] = compute.label(host_peak)
        row["gpu_peak_tflops"] = compute.label(gpu_peak)
        if args.format == "json":
            row["mem_bandwidth"] = host.model_dump() if host else None
            row["gpu_mem_bandwidth"] = gpu.model_dump() if gpu else None
            row["peak_tflops"] = host_peak.model_dump() if host_peak else None
            row["gpu_peak_tflops"] = gpu_peak.model_dump() if gpu_peak else None
        rows.append(row)
    columns = [Column("machine", "machine"), Column("ready", "ready")]
    columns += [Column(key, key) for key, _ in CHECKLIST]
    columns += [Column("mem_bandwidth", "memory"), Column("gpu_mem_bandwidth", "GPU memory")]
    columns += [Column("peak_tflops", "compute"), Column("gpu_peak_tflops", "GPU compute")]
    emit([Section(columns, rows, title="machines")], args.format, rows)
    return 0


def run_set(args: argparse.Namespace) -> int:
    # lazy: start-up time, only the verb that runs loads its library
    from benchlab.errors import ConfigError
    from benchlab.layout import Store, find_store
    from benchlab.machines import bandwidth, compute

    if args.mem_bandwidth is None and args.peak_tflops is None:
        raise ConfigError("machines set: give --mem-bandwidth GBPS, --peak-tflops TFLOPS or both")
    store = Store(find_store()).require()
    if args.mem_bandwidth is not None:
        memory = bandwidth.declared(args.mem_bandwidth)
        bandwidth.record(store, args.machine_id, memory, gpu=args.gpu)
        where = "first GPU's memory" if args.gpu else "memory"
        print(f"{args.machine_id}: {where} {bandwidth.label(memory)}; `bench catalog build` "
              "publishes it")  # fmt: skip
    if args.peak_tflops is not None:
        peak = compute.declared(args.peak_tflops)
        compute.record(store, args.machine_id, peak, gpu=args.gpu)
        where = "first GPU's peak" if args.gpu else "peak"
        print(f"{args.machine_id}: {where} {compute.label(peak)}; `bench catalog build` "
              "publishes it")  # fmt: skip
    return 0


def run_measure(args: argparse.Namespace) -> int:
    # lazy: start-up time, only the verb that runs loads its library
    import json

    from benchlab.errors import ConfigError, DeviceError
    from benchlab.layout import Store, find_store
    from benchlab.machines import compute
    from benchlab.machines.bandwidth import label, record
    from benchlab.machines.remote_specs import measure_bandwidth, measure_compute

    store = Store(find_store()).require()
    if (args.device is None) != (args.config is None):
        raise ConfigError("--device and --config go together (a device of a sweep config)")
    if args.device is not None:
        # lazy: start-up time, only the verb that runs loads its library
        from benchlab.devices import open_transport
        from benchlab.sweep.config import load_sweep_config

        config = load_sweep_config(args.config)
        if args.device not in config.devices:
            raise ConfigError(f"{args.config}: devices: no device {args.device!r}")
        device = config.devices[args.device]
        machine_id = args.machine_id or device.machine_id or args.device
        transport = open_transport(args.device, device)
    else:
        # lazy: start-up time, only the verb that runs loads its library
        from benchlab.devices import open_transport
        from benchlab.machines.onboard import read_machine_id
        from benchlab.models import DeviceConfig

        machine_id = args.machine_id or read_machine_id(store.root)
        if not machine_id:
            raise ConfigError("--machine-id is required (no .bench-machine-id: run bench onboard)")
        transport = open_transport(machine_id, DeviceConfig())
    with transport:
        figure = measure_bandwidth(transport)
        peak, why = measure_compute(transport) if figure is not None else (None, None)
    if figure is None:
        raise DeviceError(f"{machine_id}: the agent could not measure memory bandwidth")
    record(store, machine_id, figure)
    if peak is not None:
        compute.record(store, machine_id, peak)
    if args.format == "json":
        answer = {
            "machine_id": machine_id,
            "mem_bandwidth": figure.model_dump(),
            "peak_tflops": peak.model_dump() if peak else None,
            "peak_tflops_error": why,
        }
        print(json.dumps(answer))
    else:
        print(f"{machine_id}: memory {label(figure)}")
        # No figure is recorded without one (never 0): MFU of a CPU run stays not measured.
        shown = compute.label(peak) if peak else f"not measured ({why})"
        print(f"{machine_id}: compute {shown}")
    return 0
