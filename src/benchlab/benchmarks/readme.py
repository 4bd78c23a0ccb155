"""`README.md` in every run dir: how the run was made and the commands that make it again.

A person browsing `runs/by-machine/` (or a promoted copy) should not need the sweep config
to know what a directory measured. The text is built only from the point (the spec, which
the tracked sweep config already states), the command the device was asked to run, and the
outcome's status and kind. Error text stays in record.json: it can name hosts. The run dir
is private; `bench promote` passes this file through the same redactor and scan as every
other file before anything is published.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from benchlab import __version__
from benchlab.models import AXES, RunSpec

README = "README.md"
_FIRST_RUN = re.compile(r"^<first-run-(?P<machine>.+)>$")
_PLAIN = re.compile(r"^[A-Za-z0-9_.@/+-]+$")


@dataclass(frozen=True)
class RunStory:
    """What the README says about one run, gathered by the runner as it writes the dir."""

    spec: RunSpec
    run_id: str
    status: str
    """`ok`, `failed (measurement)`, `not attempted (a hole)` ..."""
    started_at: str | None
    command: list[str] | None
    """The argv the device was asked to run, or None when no task was built."""
    config_path: str | None
    """As the sweep session got it (state.json `config_path`), or None when unknown."""
    matrix: Mapping[str, Any]
    """The config's matrix: the axes it lists are fixed for `bench inject`."""
    next_repeat: int
    """A repeat index to suggest for measuring this point again."""


def _yaml_value(value: Any) -> str:
    """A value as `bench inject` reads it (YAML): JSON is YAML; plain words stay plain."""
    if isinstance(value, str) and _PLAIN.match(value) and not _looks_typed(value):
        return value
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def _looks_typed(text: str) -> bool:
    """Whether YAML would read `text` as something other than this string (null, 1.5, true)."""
    if text.lower() in {"null", "~", "true", "false", "yes", "no", "on", "off", "y", "n"}:
        return True
    try:
        float(text)
    except ValueError:
        return False
    return True


def inject_axes(spec: RunSpec, matrix: Mapping[str, Any]) -> list[str]:
    """`AXIS=VALUE` words that fix each axis the matrix lists (sweeps) at this point's value.

    An axis the config gives one value needs no word: `bench inject` takes it from the
    config, which also keeps environment values out of the README.
    """
    values = spec.model_dump(mode="json")
    words = []
    for axis in AXES:
        key = "devices" if axis == "device" and "devices" in matrix else axis
        listed = matrix.get(key)
        if axis == "batch_sizes":
            swept = isinstance(listed, list) and any(isinstance(v, list) for v in listed)
        else:
            swept = isinstance(listed, list)
        if swept:
            words.append(f"{key}={_yaml_value(values.get(axis))}")
    return words


def _shown_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """The params as the README shows them: environment values left out (they may be tokens)."""
    env = params.get("env")
    if not isinstance(env, dict):
        return dict(params)
    return {**params, "env": {name: "..." for name in env}}


def rerun_commands(story: RunStory) -> list[str]:
    """The shell lines that run this point again: resume, and a fresh measurement."""
    spec, path = story.spec, story.config_path
    first = _FIRST_RUN.match(path or "")
    if first is not None:
        words = [
            "bench", "run", "--machine-id", first["machine"], "--model", spec.model,
            "--precision", spec.precision, "--config", spec.mode,
        ]  # fmt: skip
        return [shlex.join(words), shlex.join([*words, "--fresh"])]
    config = path or "CONFIG"
    inject = [
        "bench", "inject", config, *inject_axes(spec, story.matrix),
        "--repeat", str(story.next_repeat),
    ]  # fmt: skip
    return [
        shlex.join(["bench", "run", config]),
        shlex.join(inject),
        shlex.join(["bench", "run", config]),
    ]


def _point_lines(spec: RunSpec) -> list[str]:
    shape = [
        f"{name} {value}"
        for name, value in (
            ("threads", spec.threads),
            ("prompt tokens", spec.prompt_tokens),
            ("gen tokens", spec.gen_tokens),
            ("batch sizes", ",".join(map(str, spec.batch_sizes)) or None),
            ("repeat", spec.repeat),
            ("failover from", spec.failover_from),
        )
        if value is not None
    ]
    lines = [
        f"- machine: `{spec.machine_id}`, device `{spec.device}`",
        f"- experiment: `{spec.experiment}`; point `{spec.spec_id}`",
        f"- backend: `{spec.backend}`",
        f"- model: `{spec.model}`, precision `{spec.precision}`, mode `{spec.mode}`",
    ]
    if shape:
        lines.append(f"- point: {', '.join(shape)}")
    if spec.params:
        lines.append(f"- params: `{json.dumps(_shown_params(spec.params), sort_keys=True)}`")
    return lines


def render(story: RunStory) -> str:
    """The README text (Markdown)."""
    lines = [
        f"# {story.run_id}",
        "",
        f"Made by benchlab {__version__}. `manifest.json` says what was asked, `record.json` "
        "what happened (with the error, if any), `raw/` what the benchmark printed.",
        "",
        "## How it was made",
        "",
        *_point_lines(story.spec),
        f"- started: {story.started_at or 'unknown'}; status: {story.status}",
    ]
    if story.command is not None:
        lines += ["", "The command the device ran:", "", "    " + shlex.join(story.command)]
    first, *rest = rerun_commands(story)
    lines += [
        "",
        "## How to re-run it",
        "",
        "Resume the sweep (this point runs again while its record is not ok):",
        "",
        f"    {first}",
        "",
    ]
    if _FIRST_RUN.match(story.config_path or ""):
        lines += ["Measure it again, under a new sweep stamp:", "", f"    {rest[0]}", ""]
    else:
        lines += [
            "Measure this point again as a new repeat, the rest of the sweep untouched (any "
            "repeat index the point has not run yet will do):",
            "",
            *(f"    {line}" for line in rest),
            "",
        ]
    return "\n".join(lines)
