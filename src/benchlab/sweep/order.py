"""The order in which a device's workers take its pending points: pluggable (ARCHITECTURE.md,
The scheduler).

An order policy is a function `policy(specs, *, seed, device) -> list[RunSpec]` that returns
a permutation of one device's points. Three are built in, and are plug-ins of that same
interface:

- `spec` (default): the expansion order.
- `interleave`: rotate across configurations, so no configuration runs its whole share in one
  stretch of the machine's thermal history. A configuration is (backend, model, precision,
  mode); the first point of each configuration comes first, then the second of each, ...
- `shuffle`: a seeded permutation per device (seed = policies.order_seed and the device id),
  so that configuration is not confounded with thermal drift and a rerun draws the same order.

`policies.order` may also name `package.module:function`, or a name registered in the
`benchlab.order_policies` entry point group. Whatever a plug-in returns is checked: it must
be the same points, each once, because a policy that dropped or doubled a point would turn a
scheduling choice into a silent change of what is measured.

A `module:function` is imported from sys.path first (an installed package), then from the
plug-in dirs: the sweep file's own directory, then each directory of $BENCHLAB_PLUGIN_PATH
(os.pathsep-separated). So an order policy kept in the repo beside its sweep file needs no
PYTHONPATH; the dirs are on sys.path only while the module is imported, so a plug-in
imports the siblings it needs at import time.

Repeats are rounds: each repeat's points are ordered as a block of their own (round 0 first),
with the seed moved on by the repeat index, so a shuffled sweep draws a new order per round.
"""

from __future__ import annotations

import importlib
import os
import random
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Protocol, TypeVar

from benchlab.errors import ConfigError
from benchlab.models import RunSpec
from benchlab.runtime.plugins import load_plugin

ENTRY_POINT_GROUP = "benchlab.order_policies"
PLUGIN_PATH_ENV = "BENCHLAB_PLUGIN_PATH"
"""Directories (os.pathsep-separated) searched for `module:function` plug-ins after sys.path
and the sweep file's own directory."""

T = TypeVar("T")


class OrderPolicy(Protocol):
    """The plug-in interface: one device's points in, the same points in run order out."""

    def __call__(self, specs: Sequence[RunSpec], *, seed: int, device: str) -> list[RunSpec]: ...


def configuration(spec: RunSpec) -> tuple[str, str, str, str]:
    return (spec.backend, spec.model, spec.precision, spec.mode)


def interleave(specs: Sequence[RunSpec]) -> list[RunSpec]:
    buckets: dict[tuple[str, str, str, str], list[RunSpec]] = {}
    for spec in specs:
        buckets.setdefault(configuration(spec), []).append(spec)
    rows = list(buckets.values())  # first-seen order of configurations
    out: list[RunSpec] = []
    for depth in range(max((len(row) for row in rows), default=0)):
        out.extend(row[depth] for row in rows if depth < len(row))
    return out


def shuffle(specs: Sequence[T], seed: int, device: str) -> list[T]:
    out = list(specs)
    random.Random(f"{seed}:{device}").shuffle(out)
    return out


def spec_policy(specs: Sequence[RunSpec], *, seed: int, device: str) -> list[RunSpec]:
    """The built-in `spec` policy: the expansion order."""
    return list(specs)


def interleave_policy(specs: Sequence[RunSpec], *, seed: int, device: str) -> list[RunSpec]:
    """The built-in `interleave` policy."""
    return interleave(specs)


def shuffle_policy(specs: Sequence[RunSpec], *, seed: int, device: str) -> list[RunSpec]:
    """The built-in `shuffle` policy."""
    return shuffle(specs, seed, device)


BUILT_IN: dict[str, Callable[..., list[RunSpec]]] = {
    "spec": spec_policy,
    "interleave": interleave_policy,
    "shuffle": shuffle_policy,
}
POLICIES = tuple(BUILT_IN)

_resolved: dict[str, Callable[..., list[RunSpec]]] = {}


def plugin_dirs(config_file: str | Path | None = None) -> list[Path]:
    """Where a `module:function` plug-in not on sys.path is looked for, in order."""
    dirs: list[Path] = []
    if config_file is not None and Path(config_file).is_file():
        dirs.append(Path(config_file).resolve().parent)
    for part in os.environ.get(PLUGIN_PATH_ENV, "").split(os.pathsep):
        if part and Path(part) not in dirs:
            dirs.append(Path(part))
    return dirs


def _import_plugin(module_name: str, dirs: list[Path]) -> ModuleType:
    """Import from sys.path, else with the plug-in dirs on it for the import only."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError:
        if not dirs:
            raise
    added = [str(d) for d in dirs if str(d) not in sys.path]
    sys.path.extend(added)
    importlib.invalidate_caches()
    try:
        return importlib.import_module(module_name)
    finally:
        for entry in added:
            sys.path.remove(entry)


def resolve_policy(
    name: str, *, config_file: str | Path | None = None
) -> Callable[..., list[RunSpec]]:
    """The policy function `name` stands for; ConfigError (naming `policies.order`) if none.

    Resolved once per name and process: a plug-in is imported code, loaded when the config
    (`config_file`, whose directory is a plug-in dir) is checked, before anything runs.
    """
    if name in BUILT_IN:
        return BUILT_IN[name]
    if name in _resolved:
        return _resolved[name]
    function: object = None
    if ":" in name:
        module_name, _, attribute = name.partition(":")
        dirs = plugin_dirs(config_file)
        try:
            module = _import_plugin(module_name, dirs)
        except ImportError as exc:
            looked = ", ".join(str(d) for d in dirs) or f"none (set ${PLUGIN_PATH_ENV})"
            raise ConfigError(
                f"policies.order: cannot import {module_name!r} for order policy {name!r} "
                f"(sys.path, then plug-in dirs: {looked}): {exc}"
            ) from None
        function = getattr(module, attribute, None)
    else:
        function = load_plugin(ENTRY_POINT_GROUP, name)
    if not callable(function):
        raise ConfigError(
            f"policies.order: unknown order policy {name!r}; expected 'spec', 'interleave' "
            f"or 'shuffle', a `package.module:function`, or a name in the "
            f"{ENTRY_POINT_GROUP} entry point group"
        )
    _resolved[name] = function
    return function


def _apply(policy: str, specs: Sequence[RunSpec], seed: int, device: str) -> list[RunSpec]:
    out = list(resolve_policy(policy)(list(specs), seed=seed, device=device))
    if sorted(s.spec_id for s in out) != sorted(s.spec_id for s in specs) or not all(
        isinstance(s, RunSpec) for s in out
    ):
        raise ConfigError(
            f"policies.order: order policy {policy!r} did not return the same points it was "
            f"given for device {device!r} ({len(specs)} in, {len(out)} out); a policy may "
            "only reorder"
        )
    return out


def order_points(specs: Sequence[RunSpec], policy: str, *, seed: int, device: str) -> list[RunSpec]:
    """One device's points in the order its workers take them, round (repeat) by round."""
    resolve_policy(policy)  # an unknown name is an error even for a device with no points
    rounds: dict[int, list[RunSpec]] = {}
    for spec in specs:
        rounds.setdefault(spec.repeat or 0, []).append(spec)
    out: list[RunSpec] = []
    for repeat in sorted(rounds):
        out.extend(_apply(policy, rounds[repeat], seed + repeat, device))
    return out
