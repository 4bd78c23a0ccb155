"""Load a sweep config (`experiments/sweeps/<name>.yaml`): parse, validate, cross-check.

Every problem is one line that names the file, the key path and the reason, raised as
`ConfigError` before anything runs or is written:

    experiments/sweeps/lab.yaml: devices.pi5.failover_to[0]: unknown device 'pi6' ...

Decisions the checks encode:
- a `resource_group` named by a device but not declared under `resource_groups` is declared
  implicitly with no extra limit (ARCHITECTURE.md, The scheduler: many configs never declare
  one); a group that is
  declared but that no device names is an error, because it is almost always a typo;
- the matrix must name its device(s) unless the config declares exactly one device;
- a device may not fail over to itself, to an unknown device, or round a cycle;
- the file is hostile until proven otherwise: a YAML alias bomb (`&a [*b, *b, ...]` nine
  levels deep is a few hundred bytes that expand to a billion nodes), nesting deep enough
  to overflow a parser, and hidden characters (NUL, bidi overrides) in names are refused
  with one line naming the file, before anything is built from the data.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from benchlab.catalog.contract import declared_problem, gate_metric_problem, spec_problem
from benchlab.catalog.gate import MAX_INT
from benchlab.errors import BenchlabError, ConfigError
from benchlab.ids import check_id, check_name, hidden_character
from benchlab.metrics import declare
from benchlab.models import AXES, ResourceGroupConfig, RunSpec, SweepConfig
from benchlab.runtime.bounded_yaml import read_config_data
from benchlab.sweep.expand import check_point_count, device_settings, expand, hashed_fields
from benchlab.sweep.order import resolve_policy
from benchlab.sweep.placeholders import unknown_placeholders

_DEVICE_TEMPLATED = ("command", "workdir", "python", "env", "host", "identity_file")
_NAME_AXES = ("device", "backend", "model", "precision", "mode")
"""Matrix axes whose values are names that reach ids, the catalog and the site."""


def load_sweep_config(path: str | Path, *, max_points: int | None = None) -> SweepConfig:
    """Read, validate and cross-check one sweep config; raise ConfigError on any problem.
    `max_points`: the most points it may expand to, counted before expanding (None: no
    cap). `bench run` passes MAX_POINTS unless --max-points says otherwise; the verbs that
    read a config a sweep already ran under (gates, regression, inject) pass none."""
    where = str(path)
    return parse_sweep_config(read_config_data(path), where, max_points=max_points)


def parse_sweep_config(
    data: Any, where: str = "sweep config", *, max_points: int | None = None
) -> SweepConfig:
    """Validate an already-parsed mapping (tests and tools build configs in memory)."""
    if not isinstance(data, dict):
        raise ConfigError(
            f"{where}: expected a mapping with experiment, devices and matrix, "
            f"got {type(data).__name__}"
        )
    _check_hidden(data, where)
    try:
        config = SweepConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{where}: {_pydantic_reason(exc)}") from None
    check_config(config, where, max_points=max_points)
    return config


def _check_hidden(data: Any, where: str, key: str = "") -> None:
    """Refuse NUL, bidi and other hidden characters in any key or string of the config, and
    numbers past 64 bits or not finite (`_check_number`).

    Names end up in ids, the catalog and the site; argv and env values cannot hold a NUL
    anyway, and a bidi override in a command makes the config read differently from what
    runs. Walked iteratively (the graph was already bounded by load_yaml_bounded).
    """
    stack: list[tuple[str, Any]] = [(key, data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            _check_number(value, where, path or "(top level)", path.startswith("matrix"))
        elif isinstance(value, str):
            bad = hidden_character(value)
            if bad is not None:
                raise fail(
                    where,
                    path or "(top level)",
                    f"{value!a} holds the control or bidi character {bad}; "
                    "only visible characters are allowed",
                )
        elif isinstance(value, dict):
            for name, item in value.items():
                child = f"{path}.{name}" if path else str(name)
                if isinstance(name, str) and hidden_character(name) is not None:
                    raise fail(
                        where,
                        path or "(top level)",
                        f"key {name!a} holds the control or bidi character "
                        f"{hidden_character(name)}",
                    )
                stack.append((child, item))
        elif isinstance(value, list):
            stack.extend((f"{path}[{index}]", item) for index, item in enumerate(value))


INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def _check_number(value: float, where: str, key: str, in_matrix: bool = False) -> None:
    """Refuse a number no run file can carry into the catalog: an integer past 64 bits
    (it runs, then every catalog build after it fails to write it) or one that is not
    finite (YAML's .inf, or 1e400). A matrix value reaches the run's catalog line (its
    identity, `axes`), where every reader holds numbers within +-2**53 (ARCHITECTURE.md,
    invariant 11): past that it is refused here, not run and then set aside by every reader."""
    if isinstance(value, int) and not INT64_MIN <= value <= INT64_MAX:
        raise fail(where, key, f"integer {_digits(value)} is outside the 64-bit range; refused")
    if isinstance(value, float) and not math.isfinite(value):
        raise fail(where, key, f"{value} is not a finite number; refused")
    if in_matrix and not -MAX_INT <= value <= MAX_INT:
        shown = _digits(value) if isinstance(value, int) else f"{value:g}"
        raise fail(
            where,
            key,
            f"{shown} is outside +-2**53, the range every catalog reader accepts; refused",
        )


def _digits(value: int) -> str:
    digits = str(value)
    return digits if len(digits) <= 24 else f"{digits[:20]}...({len(digits)} digits)"


def check_config(
    config: SweepConfig, where: str = "sweep config", *, max_points: int | None = None
) -> None:
    """The cross-checks pydantic cannot do alone (they relate one part to another)."""
    _check_ids(config, where)
    _check_devices(config, where)
    _check_failover(config, where)
    _check_groups(config, where)
    _check_order(config, where)
    for index, name in enumerate(config.public_text):
        if not name or len(name) > 64 or not name.replace("_", "").replace("-", "").isalnum():
            raise fail(where, f"public_text[{index}]", f"{name!a} is not a param name")
    # Expanding proves the matrix: known axes, known devices and backends, no duplicates;
    # its points are counted first, so a matrix of a million is refused, not listed.

    check_point_count(config, where, max_points)
    specs = expand(config, where=where)
    _check_contract(config, specs, where)


_LINE_AXES = (*AXES, "machine_id", "tags")
"""What of a RunSpec reaches its catalog line (the spec id aside, a checked id)."""


def _check_contract(config: SweepConfig, specs: list[RunSpec], where: str) -> None:
    """The writer contract (`catalog.contract`): each point's catalog line, as it will be
    written once the point runs, passes the gate every reader applies; declared metrics do
    not take a name the catalog reserves; a gate names a metric a run can hold."""
    problem = declared_problem(declare(where, config.metrics))
    if problem is not None:
        raise ConfigError(f"{where}: {problem}")
    declared = set(config.metrics or {})
    for spec in specs:
        own = spec.params.get("metrics")
        declared.update(own if isinstance(own, dict) else ())
    for index, gate in enumerate(config.gates):
        problem = gate_metric_problem(gate.metric, declared)
        if problem is not None:
            raise fail(where, f"gates[{index}].metric", problem)
    seen: set[tuple[str, str]] = set()
    for index, spec in enumerate(specs):
        # A line's fields come from the point's axis values, each checked on its own by the
        # gate: a point whose every value an earlier point had adds nothing to check.
        values = {(name, repr(getattr(spec, name))) for name in _LINE_AXES}
        if values <= seen:
            continue
        seen |= values
        problem = spec_problem(spec, config.revision, device_settings(config, spec.device))
        if problem is not None:
            fields = hashed_fields(spec)
            words = ", ".join(
                f"{k}={v}" for k, v in fields.items() if v not in (None, [], {}) and k != "params"
            )
            raise fail(
                where,
                f"matrix (point {index + 1}: {words})",
                f"its catalog line would be refused by every reader: {problem}",
            )


def fail(where: str, key: str, reason: str) -> ConfigError:
    """The one shape of a config error: `file: key.path: reason`."""
    return ConfigError(f"{where}: {key}: {reason}")


def _pydantic_reason(exc: ValidationError) -> str:
    first = exc.errors()[0]
    key = ""
    for part in first["loc"]:
        key += f"[{part}]" if isinstance(part, int) else (f".{part}" if key else str(part))
    kind = first["type"]
    if kind == "extra_forbidden":
        reason = "unknown key"
    elif kind == "missing":
        reason = "required key is missing"
    else:
        reason = first["msg"]
    return f"{key or '(top level)'}: {reason}"


def _check_ids(config: SweepConfig, where: str) -> None:
    try:
        check_id(config.experiment, "experiment")
    except BenchlabError as exc:
        raise fail(where, "experiment", str(exc)) from None
    for device_id, device in config.devices.items():
        try:
            check_id(device_id, "device id")
            check_id(device.machine_id or device_id, "machine id")
        except BenchlabError as exc:
            raise fail(where, f"devices.{device_id}", str(exc)) from None
    if not config.devices:
        raise fail(where, "devices", "declare at least one device")
    for axis in _NAME_AXES:
        values = config.matrix.get(axis)
        for index, value in enumerate(values if isinstance(values, list) else [values]):
            if isinstance(value, str):
                try:
                    check_name(value, axis)
                except BenchlabError as exc:
                    raise fail(where, f"matrix.{axis}[{index}]", str(exc)) from None


def _check_devices(config: SweepConfig, where: str) -> None:
    for device_id, device in config.devices.items():
        key = f"devices.{device_id}"
        if device.transport == "ssh" and not device.host:
            raise fail(where, f"{key}.host", "required for transport ssh")
        if device.transport == "exec" and not device.command:
            raise fail(where, f"{key}.command", "required for transport exec (the prefix)")
        for name in _DEVICE_TEMPLATED:
            unknown = unknown_placeholders(getattr(device, name))
            if unknown:
                raise fail(
                    where,
                    f"{key}.{name}",
                    f"unknown placeholder ${{{unknown[0]}}}; known: "
                    "${worker_instance_id}, ${device}, ${experiment}",
                )


def _check_failover(config: SweepConfig, where: str) -> None:
    for device_id, device in config.devices.items():
        for index, target in enumerate(device.failover_to):
            key = f"devices.{device_id}.failover_to[{index}]"
            if target == device_id:
                raise fail(where, key, f"device {device_id!r} cannot fail over to itself")
            if target not in config.devices:
                raise fail(
                    where,
                    key,
                    f"unknown device {target!r} (declared: {', '.join(sorted(config.devices))})",
                )
    # A cycle would let a point bounce between devices forever.
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for target in config.devices[node].failover_to:
            if state.get(target) == 1:
                loop = [*trail[trail.index(target) :], target]
                raise fail(
                    where,
                    f"devices.{node}.failover_to",
                    f"failover cycle {' -> '.join(loop)}",
                )
            if state.get(target) is None:
                visit(target, [*trail, target])
        state[node] = 2

    for device_id in sorted(config.devices):
        if device_id not in state:
            visit(device_id, [device_id])


def _check_order(config: SweepConfig, where: str) -> None:
    """The order policy resolves (a plug-in is imported now, before anything runs)."""
    try:
        resolve_policy(config.policies.order, config_file=where)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _check_groups(config: SweepConfig, where: str) -> None:
    named = {d.resource_group for d in config.devices.values() if d.resource_group}
    for group in sorted(config.resource_groups):
        if group not in named:
            raise fail(
                where,
                f"resource_groups.{group}",
                "no device names this group (set resource_group on its devices)",
            )
    for group in sorted(named - set(config.resource_groups)):
        config.resource_groups[group] = ResourceGroupConfig()
