"""Fakes for the pure sweep logic: a scripted Backend and a scripted Transport.

Real backends and the real LocalTransport are exercised by the CLI and integration tests;
these fakes only let the attempt/journal/resume logic be driven into every branch.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from benchlab.benchmarks.base import Backend, ParsedRun
from benchlab.devices.base import Transport
from benchlab.errors import ParseError
from benchlab.models import (
    AgentEnvelope,
    AgentTask,
    BatchResults,
    KernelResults,
    RunSpec,
)
from benchlab.sweep.config import parse_sweep_config


def envelope(stdout: str = "", exit_code: int | None = 0, **extra: Any) -> dict[str, Any]:
    return {
        "started_at": 1000.0,
        "finished_at": 1001.5,
        "exit_code": exit_code,
        "stdout": stdout,
        "stderr": extra.pop("stderr", ""),
        "telemetry": extra.pop(
            "telemetry",
            {"load_1m": {"min": 0.5, "median": 0.7, "max": 0.9}, "samples": [{}, {}]},
        ),
        **extra,
    }


def ok_stdout(decode: float = 15.56, prefill: float = 56.8) -> str:
    return json.dumps({"decode": decode, "prefill": prefill})


class FakeBackend(Backend):
    """Builds a task naming the spec; parses `{"decode": x, "prefill": y}` from stdout."""

    name = "fake"

    def __init__(self) -> None:
        self.check_error: BaseException | None = None
        self.build_error: BaseException | None = None
        self.parse_error: BaseException | None = None
        self.model_display = "SmolLM2-135M"

    def check_available(self, device: Transport, spec: RunSpec) -> None:
        if self.check_error is not None:
            raise self.check_error

    def build_task(self, spec: RunSpec, run_id: str) -> AgentTask:
        if self.build_error is not None:
            raise self.build_error
        return AgentTask(
            argv=["bench-fake", spec.spec_id, *map(str, spec.params.get("argv", []))],
            env={"SCRATCH": str(spec.params.get("scratch", ""))},
            timeout_s=60,
        )

    def parse(self, envelope: AgentEnvelope, spec: RunSpec, run_id: str) -> ParsedRun:
        if self.parse_error is not None:
            raise self.parse_error
        try:
            data = json.loads(envelope.stdout)
        except ValueError as exc:
            raise ParseError(f"{run_id}: stdout is not JSON") from exc
        prefill = (
            [{"tokens": spec.prompt_tokens or 16, "median_ms": 1.0, "tok_per_sec": data["prefill"]}]
            if data.get("prefill") is not None
            else []
        )
        decode = {"tok_per_sec": data["decode"]} if data.get("decode") is not None else None
        kernel = KernelResults(
            run_id="placeholder",
            engine="fake",
            precision=spec.precision,
            model=self.model_display,
            benchmark={"prefill": prefill, "decode": decode},
        )
        batch = BatchResults(
            run_id="placeholder", engine="fake", model=self.model_display, precision="q8"
        )
        return ParsedRun(kernel=kernel, batch=batch, extra_files=data.get("extra", {}))


class FakeTransport(Transport):
    """Answers `run` from a script: each item is an answer dict or an exception to raise.

    When the script runs out, every further call answers `default`.
    """

    def __init__(self, device_id: str = "laptop", script: list[Any] | None = None) -> None:
        super().__init__(device_id)
        self.script = list(script or [])
        self.default: Any = envelope(ok_stdout())
        self.calls: list[tuple[str, Any, float]] = []
        self.closed = 0
        self.on_call: Callable[[str, Any], None] | None = None

    def call(self, verb: str, payload: dict[str, Any] | None = None, *, timeout: float) -> Any:
        self.calls.append((verb, payload, timeout))
        if self.on_call is not None:
            self.on_call(verb, payload)
        item = self.script.pop(0) if self.script else self.default
        if isinstance(item, BaseException):
            raise item
        return item

    def close(self) -> None:
        self.closed += 1


BASE_CONFIG: dict[str, Any] = {
    "experiment": "lab",
    "devices": {"laptop": {"transport": "local"}, "pi5": {"transport": "local"}},
    "policies": {"retries": {"attempts": 3, "backoff_s": 0}},
    "matrix": {
        "device": ["laptop", "pi5"],
        "backend": "reference",
        "model": "smollm2-135m",
        "precision": ["f32", "q8"],
        "threads": 4,
        "prompt_tokens": 128,
        "gen_tokens": 64,
    },
}


def make_config(**overrides: Any) -> Any:
    data = json.loads(json.dumps(BASE_CONFIG))
    for key, value in overrides.items():
        if key == "matrix":
            data["matrix"].update(value)
        else:
            data[key] = value
    return parse_sweep_config(data, "lab.yaml")
