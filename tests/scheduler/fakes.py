"""Test doubles for the scheduler: a backend that needs no numpy, a runner that writes nothing."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from benchlab.benchmarks.base import Backend, ParsedRun
from benchlab.devices.base import Transport
from benchlab.devices.fake import FakeBehaviour, FakeDevice
from benchlab.errors import DeviceError
from benchlab.models import (
    AgentEnvelope,
    AgentTask,
    BatchResults,
    DecodeResult,
    GitInfo,
    KernelBenchmark,
    KernelResults,
    RunRecord,
    RunSpec,
    SweepConfig,
)
from benchlab.sweep.attempt import AttemptOutcome, Runner
from benchlab.sweep.config import parse_sweep_config


class FakeBackend(Backend):
    """Runs nothing of its own: the FakeDevice answers, the parser reads a constant."""

    name = "reference"

    def check_available(self, device: Transport, spec: RunSpec) -> None:
        return None

    def build_task(self, spec: RunSpec, run_id: str) -> AgentTask:
        return AgentTask(argv=["fake", spec.model, str(spec.threads)], timeout_s=30)

    def parse(self, envelope: AgentEnvelope, spec: RunSpec, run_id: str) -> ParsedRun:
        json.loads(envelope.stdout)
        return ParsedRun(
            kernel=KernelResults(
                run_id=run_id,
                engine="fake",
                precision=spec.precision,
                model=spec.model,
                benchmark=KernelBenchmark(decode=DecodeResult(tok_per_sec=10.0)),
            ),
            batch=BatchResults(
                run_id=run_id, engine="fake", model=spec.model, precision=spec.precision
            ),
        )


def make_config(
    devices: dict[str, dict[str, Any]],
    *,
    models: Iterable[str] = ("a", "b", "c"),
    threads: Iterable[int] = (1, 2),
    policies: dict[str, Any] | None = None,
    resource_groups: dict[str, Any] | None = None,
    matrix_devices: list[str] | None = None,
) -> SweepConfig:
    data: dict[str, Any] = {
        "experiment": "exp",
        "devices": devices,
        "matrix": {
            "device": matrix_devices or list(devices),
            "backend": "reference",
            "model": list(models),
            "precision": "f32",
            "threads": list(threads),
        },
        "policies": policies or {"retries": {"attempts": 3, "backoff_s": 0}},
    }
    if resource_groups:
        data["resource_groups"] = resource_groups
    return parse_sweep_config(data, "lab.yaml")


def real_runner(store: Path, config: SweepConfig) -> Runner:
    return Runner(
        store,
        config,
        experiment=config.experiment,
        git_info=GitInfo(),
        _backend=lambda _: FakeBackend(),
    )


def fleet_factory(fleet: dict[str, FakeBehaviour]):  # type: ignore[no-untyped-def]
    def open_device(device_id: str, config: Any) -> FakeDevice:
        return FakeDevice(device_id, fleet.setdefault(device_id, FakeBehaviour()))

    return open_device


class Events:
    """A Progress that keeps what it was told."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.done: list[tuple[int, int, str, str]] = []
        self._lock = threading.Lock()

    def point_done(self, done: int, total: int, spec: RunSpec, record: RunRecord) -> None:
        with self._lock:
            self.done.append((done, total, record.run_id, record.status))

    def event(self, line: str) -> None:
        with self._lock:
            self.lines.append(line)

    def close(self) -> None:
        pass


class LightRunner:
    """Calls the device like Runner.attempt does, writes nothing: for property tests."""

    def __init__(self) -> None:
        self.completed: list[str] = []
        self._lock = threading.Lock()

    def attempt(self, spec, run_id, transport, *, attempt=1, attempts=1, worker=None, warnings=()):  # type: ignore[no-untyped-def]
        kind = None
        try:
            transport.call("run", {"argv": [run_id]}, timeout=30)
        except DeviceError:
            kind = "transport"
        with self._lock:
            if kind is None:
                self.completed.append(spec.device)
        record = RunRecord(
            run_id=run_id,
            spec_id=spec.spec_id,
            machine_id=spec.machine_id,
            device=spec.device,
            status="ok" if kind is None else "failed",
            failure_kind=kind,
            attempt=attempt,
            attempts=attempts,
            worker=worker,
            warnings=list(warnings),
            spec=spec,
        )
        return AttemptOutcome(record=record, failure_kind=kind)

    def write_hole(self, spec, run_id, reason, *, failure_kind="transport"):  # type: ignore[no-untyped-def]
        return RunRecord(
            run_id=run_id,
            spec_id=spec.spec_id,
            machine_id=spec.machine_id,
            device=spec.device,
            status="failed",
            failure_kind=failure_kind,
            error=f"not attempted: {reason}",
            spec=spec,
        )
