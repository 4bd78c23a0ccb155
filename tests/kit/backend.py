"""A backend that needs no numpy and no binary, and the envelopes a device answers with.

Real backends are exercised by tests/benchmarks and the CLI tests; this one only lets the
attempt, journal, resume and scheduler logic be driven into every branch.
"""

from __future__ import annotations

import json
from typing import Any

from benchlab.benchmarks.base import Backend, ParsedRun
from benchlab.devices.base import Transport
from benchlab.errors import ParseError
from benchlab.models import AgentEnvelope, AgentTask, BatchResults, KernelResults, RunSpec


def envelope(stdout: str = "", exit_code: int | None = 0, **extra: Any) -> dict[str, Any]:
    """An agent's `run` answer (the JSON a transport returns), with a telemetry summary."""
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
    """What a FakeBackend task prints when it measured something."""
    return json.dumps({"decode": decode, "prefill": prefill})


class FakeBackend(Backend):
    """Builds a task naming the spec; parses `{"decode": x, "prefill": y}` from stdout.

    `decode` is the rate reported when stdout names none: a `FakeDevice` answers with its
    own JSON (device and argv), and the scheduler's tests only need every run to succeed.
    Set `check_error`, `build_error` or `parse_error` to make that step raise.
    """

    name = "fake"

    def __init__(self, *, decode: float | None = None) -> None:
        self.decode = decode
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
        rate = data.get("decode", self.decode)
        prefill = (
            [{"tokens": spec.prompt_tokens or 16, "median_ms": 1.0, "tok_per_sec": data["prefill"]}]
            if data.get("prefill") is not None
            else []
        )
        kernel = KernelResults(
            run_id="placeholder",
            engine="fake",
            precision=spec.precision,
            model=self.model_display,
            benchmark={
                "prefill": prefill,
                "decode": {"tok_per_sec": rate} if rate is not None else None,
            },
        )
        batch = BatchResults(
            run_id="placeholder", engine="fake", model=self.model_display, precision="q8"
        )
        return ParsedRun(kernel=kernel, batch=batch, extra_files=data.get("extra", {}))
