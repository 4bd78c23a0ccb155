"""Expand a sweep config's matrix into RunSpecs, each naming exactly one device.

A scalar in the matrix is fixed, a list is an axis; the product runs in a fixed axis order
(device outermost, params innermost) over the values in the order the config lists them,
so the same config always yields the same specs in the same order. `batch_sizes` is one list
per point (a list of lists makes it an axis); `params` is one mapping (a list of mappings
makes it an axis).

Repeats (`repeats: N` in the matrix, or `policies.repeats`) are rounds: every point runs N
times, repeat 0 first for every point, then repeat 1, and so on. Each repeat is its own run:
the repeat index (from 1; repeat 0 is the point itself, so a sweep without repeats keeps its
ids) is hashed into the spec id, and so into the run id. It is not part of the measurement
identity (benchlab.identity reads no `repeat`), so every repeat lands in the same series and
the spread between them is the noise of the measurement.

A spec's id hashes what is measured (device, backend, model, shapes, params, failover
origin) and not the experiment name or tags, so the same measurement has the same spec id
in every experiment and `bench regression` can line runs up across sweeps.
"""

from __future__ import annotations

import itertools
from typing import Any

from benchlab.benchmarks import get_backend
from benchlab.catalog.contract import params_problem
from benchlab.errors import BenchlabError, ConfigError
from benchlab.ids import SPEC_HASH_CHARS, settings_digest
from benchlab.metrics import declare
from benchlab.models import AXES, Policies, RunSpec, SweepConfig
from benchlab.redact.public_ids import public_spec_id
from benchlab.sweep.order import order_points

MAX_POINTS = 10_000
"""Points (repeats included) a config may expand to unless `--max-points` lifts it: a
matrix of a million points took a minute and 1.9 GB to list; one axis too many is a typo."""

DEFAULT_MODE = "batch"
REQUIRED = ("backend", "model", "precision")
_HASHED = (*AXES, "machine_id", "failover_from", "repeat")
"""What a spec id hashes of the spec: what is measured, and which repeat (config_hash sorts
keys, so order is free). `repeat` is hashed only when set, so repeat 0 keeps the id it
always had; so is the device's `settings` (`device_settings`), which the spec does not
carry: points of one device share it, so two points of one config still differ in these."""
MAX_REPEATS = 10_000
"""More repeats than anyone means; a typo (`repeats: 1000000`) should not expand forever."""
MAX_POINTS_FLAG = "--max-points"


def count_points(config: SweepConfig, where: str = "sweep config") -> int:
    """How many points `expand` would make, counted without making them: the product of
    the axis lengths, times the repeats."""
    axes = matrix_axes(config, where)
    total = repeat_count(config, where)
    for name in AXES:
        total *= len(axes[name])
    return total


def check_point_count(
    config: SweepConfig, where: str = "sweep config", max_points: int | None = MAX_POINTS
) -> int:
    """Refuse, before expanding, a config of more than `max_points` points (None: no cap)."""
    total = count_points(config, where)
    if max_points is not None and total > max_points:
        raise ConfigError(
            f"{where}: matrix: expands to {total:,} points, over the limit of "
            f"{max_points:,}; refused before expanding (pass {MAX_POINTS_FLAG} {total} to "
            "run it anyway)"
        )
    return total


def expand(
    config: SweepConfig, *, where: str = "sweep config", repeat: int | None = None
) -> list[RunSpec]:
    """All points of the sweep, in the config's deterministic order (before policy order).

    With `repeat`, only that round: every point once, as repeat `repeat` (what a time
    budget runs, round after round); otherwise every repeat the config declares.
    """
    axes = matrix_axes(config, where)
    rounds = [repeat] if repeat is not None else list(range(repeat_count(config, where)))
    specs: list[RunSpec] = []
    seen: dict[str, int] = {}
    for index, values in itertools.product(
        rounds, list(itertools.product(*(axes[name] for name in AXES)))
    ):
        point = dict(zip(AXES, values, strict=True))
        point["repeat"] = index or None
        spec = make_spec(config, point)
        if spec.spec_id in seen:
            first = specs[seen[spec.spec_id]]
            if hashed_fields(first) != hashed_fields(spec):
                # Two different measurements, one id: they would share (and overwrite) a run
                # dir, so this is refused however unlikely SPEC_HASH_CHARS makes it.
                raise ConfigError(
                    f"{where}: matrix: points {seen[spec.spec_id] + 1} ({_point_words(first)}) "
                    f"and {len(specs) + 1} ({_point_words(spec)}) are different measurements "
                    f"with one spec id {spec.spec_id} (a hash collision); change either point"
                )
            raise ConfigError(
                f"{where}: matrix: points {seen[spec.spec_id] + 1} and {len(specs) + 1} "
                f"are the same measurement ({spec.spec_id}); remove the duplicate value"
            )
        seen[spec.spec_id] = len(specs)
        specs.append(spec)
    return specs


def hashed_fields(spec: RunSpec) -> dict[str, Any]:
    """What a spec id hashes, as the spec holds it: equal for one measurement, else not."""
    data = spec.model_dump(mode="json")
    return {name: data.get(name) for name in _HASHED}


def _point_words(spec: RunSpec) -> str:
    fields = hashed_fields(spec)
    return ", ".join(
        f"{name}={value}"
        for name, value in fields.items()
        if value not in (None, [], {}) and name != "machine_id"
    )


def make_spec(
    config: SweepConfig, point: dict[str, Any], *, failover_from: str | None = None
) -> RunSpec:
    """One RunSpec from one matrix point (device and axis values)."""
    device = point["device"]
    machine = config.devices[device].machine_id or device
    fields: dict[str, Any] = {
        "device": device,
        "machine_id": machine,
        "backend": point["backend"],
        "model": point["model"],
        "precision": point["precision"],
        "mode": point.get("mode") or DEFAULT_MODE,
        "threads": point.get("threads"),
        "prompt_tokens": point.get("prompt_tokens"),
        "gen_tokens": point.get("gen_tokens"),
        "batch_sizes": list(point.get("batch_sizes") or []),
        "params": _with_declared(config, dict(point.get("params") or {})),
        "failover_from": failover_from,
        "repeat": point.get("repeat") or None,
    }
    tags = list(dict.fromkeys(config.tags))
    if failover_from:
        tags.append(f"failover-from:{failover_from}")
    hashed = {name: fields[name] for name in _HASHED if name != "repeat" or fields[name]}
    settings = device_settings(config, device)
    if settings is not None:
        hashed["settings"] = settings
    identity = public_spec_id(
        machine,
        fields["model"],
        fields["precision"],
        fields["mode"],
        hashed,
        hash_chars=SPEC_HASH_CHARS,
    )
    return RunSpec(spec_id=identity, experiment=config.experiment, tags=tags, **fields)


def _with_declared(config: SweepConfig, params: dict[str, Any]) -> dict[str, Any]:
    """A point's params with the config's `metrics:` declarations (ARCHITECTURE.md,
    Metrics): the run record carries them to the catalog; a backend's own
    `params.metrics` wins for a name both declare."""
    if not config.metrics:
        return params
    own = params.get("metrics")
    params["metrics"] = {**config.metrics, **(own if isinstance(own, dict) else {})}
    return params


def device_settings(config: SweepConfig, device: str) -> str | None:
    """The digest of the device's env, workdir, exec prefix and interpreter
    (`ids.settings_digest`), None where it sets none of them: part of the spec id and of
    the measurement identity (`settings`)."""
    declared = config.devices.get(device)
    if declared is None:
        return None
    return settings_digest(
        declared.env, declared.workdir, command=declared.command, python=declared.python
    )


def failover_spec(config: SweepConfig, spec: RunSpec, to_device: str) -> RunSpec:
    """The same point moved to a declared spare: its own spec id and a failover-from tag."""
    if to_device not in config.devices[spec.device].failover_to:
        raise ConfigError(
            f"device {spec.device!r} does not declare {to_device!r} in failover_to; "
            "work is never moved between devices that are not declared interchangeable"
        )
    point = spec.model_dump()
    point["device"] = to_device
    return make_spec(config, point, failover_from=spec.device)


def order_specs(specs: list[RunSpec], policies: Policies) -> list[RunSpec]:
    """Apply `policies.order` to each device's points, exactly as the concurrent scheduler
    does (`benchlab.sweep.order`), keeping devices in the order the matrix lists them:
    spec (as expanded), interleave (rotate configurations), shuffle (seeded per device) or a
    plug-in. Repeats stay rounds: all of round 0 (every device) before any of round 1."""
    by_round: dict[int, dict[str, list[RunSpec]]] = {}
    for spec in specs:
        by_round.setdefault(spec.repeat or 0, {}).setdefault(spec.device, []).append(spec)
    out: list[RunSpec] = []
    for repeat in sorted(by_round):
        for device, points in by_round[repeat].items():
            out.extend(
                order_points(points, policies.order, seed=policies.order_seed, device=device)
            )
    return out


def repeat_count(config: SweepConfig, where: str = "sweep config") -> int:
    """How many repeats the config declares: `matrix.repeats`, else `policies.repeats`."""
    value = config.matrix.get("repeats")
    if value is None:
        return config.policies.repeats
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_REPEATS:
        raise ConfigError(
            f"{where}: matrix.repeats: expected a whole number of repeats from 1 to "
            f"{MAX_REPEATS}, got {value!r}"
        )
    if config.policies.repeats not in (1, value):
        raise ConfigError(
            f"{where}: matrix.repeats: {value} disagrees with policies.repeats "
            f"{config.policies.repeats}; give one of them"
        )
    return value


def matrix_axes(config: SweepConfig, where: str) -> dict[str, list[Any]]:
    """Each axis as the list of its values; one-line errors for anything malformed."""
    matrix = dict(config.matrix)
    matrix.pop("repeats", None)  # not an axis of the product: see repeat_count
    known = {*AXES, "devices", "repeats"}
    for key in matrix:
        if key not in known:
            raise ConfigError(
                f"{where}: matrix.{key}: unknown axis (known: {', '.join(sorted(known))})"
            )
    if "device" in matrix and "devices" in matrix:
        raise ConfigError(f"{where}: matrix.devices: give either device or devices, not both")
    if "devices" in matrix:
        matrix["device"] = matrix.pop("devices")
    if "device" not in matrix:
        if len(config.devices) != 1:
            raise ConfigError(
                f"{where}: matrix.device: required when more than one device is declared"
            )
        matrix["device"] = next(iter(config.devices))
    for key in REQUIRED:
        if key not in matrix:
            raise ConfigError(f"{where}: matrix.{key}: required key is missing")

    axes: dict[str, list[Any]] = {}
    for key in ("device", "backend", "model", "precision", "mode"):
        axes[key] = _strings(matrix.get(key, DEFAULT_MODE if key == "mode" else None), where, key)
    for key in ("threads", "prompt_tokens", "gen_tokens"):
        axes[key] = _counts(matrix.get(key), where, key)
    axes["batch_sizes"] = _batch_sizes(matrix.get("batch_sizes"), where)
    axes["params"] = _params(matrix.get("params"), where)
    declare(where, config.metrics)  # one line naming metrics.<name>.<field>, before any run

    for index, device in enumerate(axes["device"]):
        if device not in config.devices:
            key = "matrix.device" if len(axes["device"]) == 1 else f"matrix.device[{index}]"
            raise ConfigError(
                f"{where}: {key}: unknown device {device!r} "
                f"(declared: {', '.join(sorted(config.devices))})"
            )
    for index, backend in enumerate(axes["backend"]):
        key = "matrix.backend" if len(axes["backend"]) == 1 else f"matrix.backend[{index}]"
        _check_backend(backend, where, key)
    return axes


def _check_backend(name: str, where: str, key: str) -> None:
    try:
        get_backend(name)
    except BenchlabError as exc:
        raise ConfigError(f"{where}: {key}: {exc}") from None


def _axis(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else [value]


def _unique(values: list[Any], where: str, key: str) -> list[Any]:
    if not values:
        raise ConfigError(f"{where}: matrix.{key}: an axis needs at least one value")
    seen: list[Any] = []
    for value in values:
        if value in seen:
            raise ConfigError(f"{where}: matrix.{key}: duplicate value {value!r}")
        seen.append(value)
    return values


def _strings(value: Any, where: str, key: str) -> list[str]:
    values = _axis(value)
    for item in values:
        if not isinstance(item, str) or not item.strip():
            raise ConfigError(
                f"{where}: matrix.{key}: expected a name or a list of names, got {item!r}"
            )
    return _unique(values, where, key)


def _counts(value: Any, where: str, key: str) -> list[int | None]:
    values = _axis(value)
    for item in values:
        if item is None and len(values) == 1:
            continue
        if isinstance(item, bool) or not isinstance(item, int) or item < 1:
            raise ConfigError(
                f"{where}: matrix.{key}: expected a positive integer or a list of them, "
                f"got {item!r}"
            )
    return _unique(values, where, key)


def _batch_sizes(value: Any, where: str) -> list[list[int]]:
    if value is None or value == []:
        return [[]]
    if not isinstance(value, list):
        raise ConfigError(f"{where}: matrix.batch_sizes: expected a list of batch sizes")
    rows = value if all(isinstance(item, list) for item in value) else [value]
    for row in rows:
        for item in row:
            if isinstance(item, bool) or not isinstance(item, int) or item < 1:
                raise ConfigError(
                    f"{where}: matrix.batch_sizes: expected positive integers "
                    f"(or a list of lists of them), got {item!r}"
                )
    return _unique(rows, where, "batch_sizes")


def _params(value: Any, where: str) -> list[dict[str, Any]]:
    if value is None:
        return [{}]
    values = _axis(value)
    for index, item in enumerate(values):
        if not isinstance(item, dict):
            raise ConfigError(
                f"{where}: matrix.params: expected a mapping or a list of mappings, got {item!r}"
            )
        # A point's params are its catalog line's `axes`: held here to the readers' gate
        # (the writer contract, `catalog.contract`), not run and then set aside by them.
        problem = params_problem(item)
        if problem is not None:
            key = "matrix.params" if not isinstance(value, list) else f"matrix.params[{index}]"
            sep = "" if problem.startswith((".", "[")) else ": "
            raise ConfigError(f"{where}: {key}{sep}{problem}; refused (no reader would accept it)")
    return _unique(values, where, "params")
