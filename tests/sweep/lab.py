"""The sweep tests' own lab: two local devices and a 2 x 2 matrix, as a parsed config.

The fakes and the config maker are the kit's (tests/kit); what stays here is the one matrix
the pure sweep tests (expansion, journal, attempt, sequential) share, so their expected spec
ids, orders and counts stay as they were written.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.kit.configs import NO_BACKOFF, parse_sweep, sweep_dict

from benchlab.models import SweepConfig

LAB_DEVICES: dict[str, Any] = {"laptop": {"transport": "local"}, "pi5": {"transport": "local"}}
"""Two local devices: enough for one-device-per-spec and failover to show."""

LAB_MATRIX: dict[str, Any] = {
    "device": ["laptop", "pi5"],
    "backend": "reference",
    "model": "smollm2-135m",
    "precision": ["f32", "q8"],
    "threads": 4,
    "prompt_tokens": 128,
    "gen_tokens": 64,
}
"""laptop/pi5 x f32/q8 at fixed shape: four points, in a known order."""


def _lab_options(matrix: dict[str, Any] | None = None, **options: Any) -> dict[str, Any]:
    """The kit config keywords of the lab: `matrix` is laid over LAB_MATRIX; experiment,
    devices and policies, when given, replace the lab's own (NO_BACKOFF: retries never
    sleep in a unit test)."""
    return {
        "experiment": "lab",
        "devices": LAB_DEVICES,
        "policies": NO_BACKOFF,
        **options,
        "matrix": {**LAB_MATRIX, **(matrix or {})},
    }


def lab_dict(**options: Any) -> dict[str, Any]:
    """The lab config as a dict, for a test that edits it before parsing."""
    return sweep_dict(**_lab_options(**options))


def lab_config(**options: Any) -> SweepConfig:
    """The lab config parsed, as `bench run` parses a file."""
    return parse_sweep(**_lab_options(**options))


ONE_ATTEMPT: dict[str, Any] = {"retries": {"attempts": 1, "backoff_s": 0}}
"""No retries: a failed point stays failed, as the end-to-end tests count them."""


def command_params(code: str, *, python: str = "{python}", **extra: Any) -> dict[str, Any]:
    """The command backend's params for `python -c code` reporting `{"decode": x}` as JSON on
    stdout. `{python}` is left for the backend to fill in with the device's interpreter;
    `code` may use other placeholders (`{threads}`, `{precision}`)."""
    return {"argv": [python, "-c", code], "fields": {"decode": "decode"}, **extra}


def spawn_bench_run(path: Path, store: Path, **popen: Any) -> subprocess.Popen[Any]:
    """`bench run PATH --quiet` against `store` as a process of its own: one a test can
    SIGKILL or race against another. `popen` picks the pipes (and `text`)."""
    env = {**os.environ, "BENCHLAB_STORE": str(store)}
    command = [sys.executable, "-m", "benchlab", "run", str(path), "--quiet"]
    return subprocess.Popen(command, env=env, **popen)
