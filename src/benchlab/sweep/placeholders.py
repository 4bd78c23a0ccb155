"""`${worker_instance_id}`, `${device}` and `${experiment}` in commands, paths and env.

Parallel trials on one device must not collide on a VM name, a scratch dir or a port, so a
config may template them per worker (ARCHITECTURE.md, The scheduler). Substitution happens at run
time, per worker, never at load time: a spec's id is computed over the template, so ids do not
depend on which worker ran the point.

In device settings (command prefix, workdir, python, env) an unknown `${name}` is an error,
because nothing else would ever expand it. In matrix params it is left alone: a backend's
command may be a shell line that uses `${HOME}` on purpose.
"""

from __future__ import annotations

import re
from typing import Any

from benchlab.models import DeviceConfig

PLACEHOLDERS = ("device", "experiment", "worker_instance_id")
_PATTERN = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def worker_instance_id(device: str, index: int) -> str:
    """The id of worker `index` on `device`: `laptop-0`, `laptop-1`, ..."""
    return f"{device}-{index}"


def unknown_placeholders(value: Any) -> list[str]:
    """Names of `${...}` placeholders in `value` (str, list, dict) that are not ours."""
    found: list[str] = []
    for text in _strings(value):
        found.extend(name for name in _PATTERN.findall(text) if name not in PLACEHOLDERS)
    return found


def substitute(value: Any, variables: dict[str, str]) -> Any:
    """`value` with our placeholders replaced in every string, recursively; others kept."""
    if isinstance(value, str):
        return _PATTERN.sub(lambda m: variables.get(m.group(1), m.group(0)), value)
    if isinstance(value, list):
        return [substitute(item, variables) for item in value]
    if isinstance(value, tuple):
        return tuple(substitute(item, variables) for item in value)
    if isinstance(value, dict):
        return {key: substitute(item, variables) for key, item in value.items()}
    return value


def variables(*, device: str, experiment: str, worker: str | None) -> dict[str, str]:
    return {
        "device": device,
        "experiment": experiment,
        "worker_instance_id": worker or worker_instance_id(device, 0),
    }


def resolve_device(
    config: DeviceConfig, *, device: str, experiment: str, worker: str | None
) -> DeviceConfig:
    """The device config one worker uses: placeholders in command, workdir, python, env filled."""
    values = variables(device=device, experiment=experiment, worker=worker)
    update = {
        name: substitute(getattr(config, name), values)
        for name in ("command", "workdir", "python", "env", "host", "identity_file")
    }
    return config.model_copy(update=update)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)):
        return [text for item in value for text in _strings(item)]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    return []
