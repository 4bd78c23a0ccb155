"""Before a sweep writes anything: can each device run each backend it is asked to?

A backend whose binary or module is missing on a device is bad input (exit 2, nothing
written), not a column of identical config failures. Each (device, backend, model,
precision) is checked once through the backend's own availability check. A device that
cannot be asked (DeviceError) is not an answer: it is noted and the sweep goes ahead, where
its points fail as transport and are retried (ARCHITECTURE.md, invariants 3 and 4).

Each reachable device is also asked for its state (`agent system`): a busy machine, swap
in use, a powersave governor or a throttling board make numbers swing between runs, so the
sweep says so, one line each, before it starts (it still runs: the operator decides). A
device whose agent cannot say (an older agent) adds no line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from benchlab.benchmarks import get_backend
from benchlab.devices import open_transport
from benchlab.devices.base import Transport
from benchlab.errors import ConfigError, DeviceError
from benchlab.models import DeviceConfig, SweepConfig
from benchlab.sweep.expand import expand
from benchlab.sweep.placeholders import resolve_device, substitute, variables, worker_instance_id


def preflight(
    config: SweepConfig,
    where: str,
    *,
    _opener: Callable[[str, DeviceConfig], Transport] | None = None,
    _backend: Callable[[str], Any] | None = None,
) -> list[str]:
    """Raise ConfigError for a backend a device cannot run; return notes on unreachable ones."""
    if _opener is None:
        _opener = open_transport
    if _backend is None:
        _backend = get_backend
    notes: list[str] = []
    checked: set[tuple[str, str, str, str]] = set()
    unreachable: set[str] = set()
    transports: dict[str, Transport] = {}
    try:
        for spec in expand(config, where=where):
            key = (spec.device, spec.backend, spec.model, spec.precision)
            if key in checked or spec.device in unreachable:
                continue
            checked.add(key)
            worker = worker_instance_id(spec.device, 0)
            if spec.device not in transports:
                resolved = resolve_device(
                    config.devices[spec.device],
                    device=spec.device,
                    experiment=config.experiment,
                    worker=worker,
                )
                transports[spec.device] = _opener(spec.device, resolved)
            values = variables(device=spec.device, experiment=config.experiment, worker=worker)
            concrete = spec.model_copy(update={"params": substitute(spec.params, values)})
            try:
                _backend(spec.backend).check_available(transports[spec.device], concrete)
            except DeviceError as exc:
                unreachable.add(spec.device)
                notes.append(f"could not check device {spec.device!r} before the sweep: {exc}")
            except ConfigError as exc:
                raise ConfigError(
                    f"{where}: matrix.backend: {spec.backend} cannot run {spec.model} "
                    f"{spec.precision} on device {spec.device!r}: {exc}"
                ) from None
        for device, transport in sorted(transports.items()):
            if device not in unreachable:
                notes.extend(system_notes(device, transport))
    finally:
        for transport in transports.values():
            try:
                transport.close()
            except Exception:  # a broken connection's close must not hide the answer
                pass
    return notes


SYSTEM_TIMEOUT_S = 30.0


def system_notes(device: str, transport: Transport) -> list[str]:
    """One line per thing that makes `device` a poor place to measure right now."""
    try:
        answer = transport.call("system", None, timeout=SYSTEM_TIMEOUT_S)
    except DeviceError:
        return []
    advice = answer.get("advice") if isinstance(answer, dict) else None
    return [
        f"device {device!r} is not quiet: {item['message']}"
        for item in advice or []
        if isinstance(item, dict) and item.get("level") == "warn" and item.get("message")
    ]
