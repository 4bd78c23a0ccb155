"""Remote onboarding groundwork: a device's own `sysinfo` becomes its private specs.

A remote machine is described by what its agent reports, never by what the controller
guesses, so the specs of a board reached over ssh are collected on the board. They land in
`runs/by-machine/<machine>/specs.json` (private, gitignored: it carries the hostname); the
redacted public copy is the onboarding verb's job.

Re-onboarding refreshes the hardware and keeps what a person set: `registered_at`, `tags`,
`cost_per_hour`, declared figures. The agent's `membw` and `gemm` probes give the host's
measured bandwidth and peak compute.

Usage::

    specs = onboard_remote(Store(root), "pi5", sweep_config.devices["pi5"])
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from benchlab.devices import open_transport
from benchlab.errors import DeviceError, SchemaError, StoreError
from benchlab.ids import check_id, utc_iso
from benchlab.layout import read_model, write_model
from benchlab.machines import compute
from benchlab.machines.bandwidth import better, from_spec_sheet, measured
from benchlab.models import BandwidthFigure, ComputeFigure, MachineSpecs
from benchlab.sweep.placeholders import resolve_device, worker_instance_id

if TYPE_CHECKING:
    from benchlab.devices.base import Transport
    from benchlab.layout import Store
    from benchlab.models import DeviceConfig, SweepConfig

SYSINFO_TIMEOUT_S = 60.0


def specs_from_sysinfo(
    machine_id: str,
    info: dict[str, Any],
    *,
    registered_at: str,
    tags: list[str] | None = None,
    cost_per_hour: float | None = None,
) -> MachineSpecs:
    """Map the agent's `sysinfo` answer onto the machine-specs format (`models.MachineSpecs`)."""
    cpu = info.get("cpu") or {}
    memory = info.get("memory") or {}
    os_info = info.get("os") or {}
    runtimes = info.get("runtimes") or {}
    gpus = [
        {key: value for key, value in gpu.items() if value is not None}
        for gpu in info.get("gpus") or []
        if isinstance(gpu, dict) and gpu.get("model")
    ]
    storage = {k: v for k, v in (info.get("storage") or {}).items() if k in ("type", "size_gb")}
    hardware: dict[str, Any] = {
        "cpu": {
            "model": cpu.get("model") or "unknown",
            "cores_physical": cpu.get("cores_physical"),
            "cores_logical": cpu.get("cores_logical"),
            "frequency_base_mhz": cpu.get("frequency_base_mhz"),
            "architecture": cpu.get("architecture"),
        },
        "gpu": gpus,
        "ram_gb": memory.get("ram_gb"),
    }
    if any(value is not None for value in storage.values()):
        hardware["storage"] = storage
    if info.get("cgroup") is not None:
        hardware["cgroup_cpu"] = info["cgroup"]
    if info.get("gpu_error"):
        hardware["gpu_error"] = info["gpu_error"]  # "I could not look" is not "no GPU"
    runtime = {
        "python": runtimes.get("python_version"),
        "go": runtimes.get("go_version"),
        "cuda": runtimes.get("cuda_driver_version"),
    }
    return MachineSpecs.model_validate(
        {
            "machine_id": check_id(machine_id, "machine id"),
            "hostname": info.get("hostname"),
            "registered_at": registered_at,
            "hardware": hardware,
            "os": {
                "name": os_info.get("name") or os_info.get("system") or "unknown",
                "version": os_info.get("version"),
                "kernel": os_info.get("kernel"),
            },
            "runtime": {key: value for key, value in runtime.items() if value is not None},
            "tags": list(tags or []),
            "cost_per_hour": cost_per_hour,
        }
    )


def onboard_remote(
    store: Store,
    device_id: str,
    config: DeviceConfig,
    *,
    transport: Transport | None = None,
    timeout: float = SYSINFO_TIMEOUT_S,
) -> MachineSpecs:
    """Ask the device for `sysinfo` and write its private specs atomically; return them.

    Raises DeviceError when the device cannot be asked; nothing is written then.
    """
    machine_id = check_id(config.machine_id or device_id, "machine id")
    path = store.private_specs(machine_id)
    previous: MachineSpecs | None = None
    if path.is_file():
        try:
            previous = read_model(path, MachineSpecs)
        except (SchemaError, StoreError):
            previous = None  # unreadable specs are replaced by what the machine says now
    owned = transport is None
    device = transport or open_transport(device_id, config)
    try:
        info = device.call("sysinfo", None, timeout=timeout)
        if not isinstance(info, dict):
            raise DeviceError(
                f"device {device_id}: sysinfo answered {type(info).__name__}", device_id
            )
        probe = bandwidth_probe_enabled()
        measured = measure_bandwidth(device) if probe else None
        peak = measure_compute(device)[0] if probe else None
    finally:
        if owned:
            device.close()
    specs = specs_from_sysinfo(
        machine_id,
        info,
        registered_at=previous.registered_at if previous else utc_iso(),
        tags=previous.tags if previous and previous.tags else list(config.tags),
        cost_per_hour=previous.cost_per_hour if previous else None,
    )
    specs = keep_compute(keep_bandwidth(specs, previous, measured), previous, peak)
    write_model(path, specs, root=store.root)
    return specs


MEMBW_TIMEOUT_S = 120.0
GEMM_TIMEOUT_S = 60.0


def bandwidth_probe_enabled() -> bool:
    """`BENCHLAB_BANDWIDTH_PROBE=off` skips the hardware probes, `membw` and `gemm` (the test
    suite sets it: hundreds of onboardings would each copy a few hundred MiB and multiply
    matrices for a second for figures no test reads)."""
    import os

    return os.environ.get("BENCHLAB_BANDWIDTH_PROBE", "on").lower() not in ("off", "0", "no")


def measure_bandwidth(device: Transport) -> BandwidthFigure | None:
    """The device's own `membw` answer as a figure; None where the agent could not measure
    (an older agent, a board short of memory): the machine then keeps its spec-sheet or
    declared figure, and `bench machines measure` can try again."""
    try:
        answer = device.call("membw", None, timeout=MEMBW_TIMEOUT_S)
        return measured(answer if isinstance(answer, dict) else {})
    except (DeviceError, ValueError):
        return None


def measure_compute(device: Transport) -> tuple[ComputeFigure | None, str | None]:
    """The device's own `gemm` answer as a figure, or None and why not: the agent has no
    numpy, or is older, or failed. No figure is recorded then (never 0): MFU of a CPU run
    stays "not measured" unless someone declares a peak."""
    try:
        answer = device.call("gemm", None, timeout=GEMM_TIMEOUT_S)
        return compute.measured(answer if isinstance(answer, dict) else {}), None
    except (DeviceError, ValueError) as exc:
        return None, str(exc)


def keep_compute(
    specs: MachineSpecs, previous: MachineSpecs | None, measured: ComputeFigure | None
) -> MachineSpecs:
    """The new specs with the host peak `bandwidth.better` keeps (a declared figure survives
    re-onboarding, a new measurement replaces an old one) and each GPU's previous figure
    (sysinfo never states one; the spec sheet's is looked up when a run is judged)."""
    hardware = specs.hardware
    old = previous.hardware if previous is not None else None
    host = better(old.peak_tflops if old else None, measured)
    old_gpus = {g.model: g.peak_tflops for g in old.gpu} if old else {}
    gpus = [
        gpu.model_copy(update={"peak_tflops": gpu.peak_tflops or old_gpus.get(gpu.model)})
        for gpu in hardware.gpu
    ]
    return specs.model_copy(
        update={"hardware": hardware.model_copy(update={"peak_tflops": host, "gpu": gpus})}
    )


def keep_bandwidth(
    specs: MachineSpecs, previous: MachineSpecs | None, measured: BandwidthFigure | None
) -> MachineSpecs:
    """The new specs with the host figure `bandwidth.better` keeps (a declared figure
    survives re-onboarding) and each GPU's previous declared figure, else its spec sheet's."""
    hardware = specs.hardware
    old = previous.hardware if previous is not None else None
    host = better(old.mem_bandwidth if old else None, measured)
    if host is None:
        host = from_spec_sheet(hardware.cpu.model)
    old_gpus = {g.model: g.mem_bandwidth for g in old.gpu} if old else {}
    gpus = [
        gpu.model_copy(
            update={"mem_bandwidth": better(from_spec_sheet(gpu.model), old_gpus.get(gpu.model))}
        )
        for gpu in hardware.gpu
    ]
    return specs.model_copy(
        update={"hardware": hardware.model_copy(update={"mem_bandwidth": host, "gpu": gpus})}
    )


def record_missing_specs(store: Store, config: SweepConfig) -> list[str]:
    """Before a sweep: ask each device whose machine has no private specs yet for them.

    A sweep talks to its devices anyway, and the catalog, charts and site describe a machine
    only from its specs, so the first sweep on a machine records what it is. A device that
    cannot be asked is noted, never fatal: its points will say so themselves.
    """
    notes = []
    seen: set[str] = set()
    for device_id, device in sorted(config.devices.items()):
        machine_id = device.machine_id or device_id
        if machine_id in seen or store.private_specs(machine_id).is_file():
            continue
        seen.add(machine_id)
        resolved = resolve_device(
            device,
            device=device_id,
            experiment=config.experiment,
            worker=worker_instance_id(device_id, 0),
        )
        try:
            onboard_remote(store, device_id, resolved)
        except DeviceError as exc:
            notes.append(f"could not record the specs of {machine_id!r}: {exc}")
    return notes
