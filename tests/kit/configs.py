"""One sweep config from keyword arguments: as a dict, YAML text, a file, or parsed.

    write_sweep(tmp_path / "lab.yaml", devices={"box": {"transport": "local"}},
                matrix={"backend": "command", "params": {...}})

The YAML is `yaml.safe_dump` of the dict, so a test never hand-indents a config and the
same keywords feed the pure tests (`parse_sweep`) and the CLI tests (`write_sweep`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from benchlab.models import SweepConfig
from benchlab.sweep.config import parse_sweep_config

LOCAL_DEVICES: dict[str, Any] = {"local": {"transport": "local"}}
"""One local device: what a sweep runs on when a test names none."""

BASE_MATRIX: dict[str, Any] = {"backend": "reference", "model": "tiny", "precision": "f32"}
"""The matrix keys every point needs; a test's `matrix` is laid over them."""

NO_BACKOFF: dict[str, Any] = {"retries": {"attempts": 3, "backoff_s": 0}}
"""Retries without waiting: the policies of tests that drive the retry logic."""


def sweep_dict(
    *,
    experiment: str = "lab",
    devices: Mapping[str, Any] | None = None,
    matrix: Mapping[str, Any] | None = None,
    policies: Mapping[str, Any] | None = None,
    **sections: Any,
) -> dict[str, Any]:
    """The config as a plain dict. `matrix` is laid over `BASE_MATRIX`; `policies` is left
    out when None (the library's defaults apply); other sections (gates, resource_groups,
    revision ...) are passed through as given. Nothing the caller passed is shared with the
    result, so a test may change it freely."""
    data: dict[str, Any] = {
        "experiment": experiment,
        "devices": copy.deepcopy(dict(devices if devices is not None else LOCAL_DEVICES)),
    }
    if policies is not None:
        data["policies"] = copy.deepcopy(dict(policies))
    data["matrix"] = copy.deepcopy({**BASE_MATRIX, **(matrix or {})})
    data.update(copy.deepcopy(sections))
    return data


def sweep_yaml(**options: Any) -> str:
    """The config as YAML text (keys in the order a person writes them)."""
    return yaml.safe_dump(sweep_dict(**options), sort_keys=False)


def write_sweep(path: Path, **options: Any) -> Path:
    """Write the config to `path` (a .yaml file name) and return it."""
    path.write_text(sweep_yaml(**options), encoding="utf-8")
    return path


def parse_sweep(**options: Any) -> SweepConfig:
    """The config parsed as `bench run` parses a file, for tests that skip the file."""
    return parse_sweep_config(sweep_dict(**options), "lab.yaml")
