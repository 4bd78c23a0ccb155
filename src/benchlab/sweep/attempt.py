"""One attempt at one point: run it on its device, classify the outcome, write the run dir.

`Runner.attempt` never raises for a point that went wrong; it returns a record and a failure
kind (ARCHITECTURE.md, Failure classes):

| kind        | raised as                                   | retried |
|-------------|---------------------------------------------|---------|
| transport   | DeviceError anywhere, even from exists() or  | yes     |
|             | while building the task; an agent answer that |         |
|             | is not an envelope                           |         |
| measurement | the benchmark exited non-zero or timed out   | no      |
|             | on a live device (raw kept)                  |         |
| config      | our code could not build the task            | no      |
| parse       | the parser broke, or an ok run gave no       | no      |
|             | metrics (raw kept)                           |         |

Files land in `runs/by-machine/<machine>/<run-id>/`, each written atomically. Before any
artifact, a failed "interrupted" record is written; `record.json` is written again LAST with
the real outcome. So a kill at any instant leaves either no run dir, or a record that says
"not ok": never artifacts that could pass for a finished (or imported) run.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from benchlab import __version__
from benchlab.benchmarks import get_backend
from benchlab.benchmarks.base import Backend, ParsedRun
from benchlab.benchmarks.common import exit_signal, exit_text, local_cpu_flags
from benchlab.benchmarks.readme import README, RunStory, render
from benchlab.catalog.contract_runs import run_problem
from benchlab.devices.base import Transport
from benchlab.errors import (
    BenchlabError,
    ConfigError,
    DeviceError,
    MeasurementError,
    ParseError,
)
from benchlab.identity import spec_identity
from benchlab.ids import check_id, slug, utc_iso
from benchlab.layout import (
    BATCH,
    KERNEL,
    MANIFEST,
    RAW_DIR,
    RECORD,
    SWEEP_STATE,
    atomic_write_json,
    atomic_write_text,
    read_json,
    write_model,
)
from benchlab.metrics import DECODE, UNSTABLE_TAG, instability, repeat_samples, resource_metrics
from benchlab.metrics import derive as derive_measures
from benchlab.models import (
    HOLE_ERROR_PREFIX,
    AgentEnvelope,
    AgentTask,
    FailureKind,
    GitInfo,
    HarnessInfo,
    ModelInfo,
    RunManifest,
    RunRecord,
    RunSpec,
    SweepConfig,
    Timings,
)
from benchlab.sweep.expand import device_settings
from benchlab.sweep.gitinfo import read_git_info
from benchlab.sweep.journal import as_store
from benchlab.sweep.placeholders import substitute, variables

HOLE_WARNING = (
    "this point was never measured; the record exists so the hole in the matrix is visible "
    "and so a resumed sweep will pick it up"
)
INTERRUPTED_ERROR = (
    "interrupted: attempt {attempt} started at {started} and did not finish writing its "
    "results. Re-run to retry this point."
)
CALL_GRACE_S = 30.0
"""Extra seconds the transport waits beyond the task's own timeout (agent start, transfer)."""


def retry_warning(attempt: int, attempts: int, device: str) -> str:
    """The warning a record carries when it was not produced on the first attempt."""
    return (
        f"produced on attempt {attempt} of {attempts} after {attempt - 1} "
        f"transport failure(s) on {device}"
    )


@dataclass(frozen=True)
class AttemptOutcome:
    record: RunRecord
    failure_kind: FailureKind | None

    @property
    def ok(self) -> bool:
        return self.record.status == "ok"


@dataclass
class _Result:
    """What one attempt produced, before it is written."""

    kind: FailureKind | None = None
    error: str | None = None
    answer: Any = None
    envelope: AgentEnvelope | None = None
    task: AgentTask | None = None
    parsed: ParsedRun | None = None
    metrics: dict[str, float] | None = None
    tests: list[str] | None = None
    notes: list[str] = field(default_factory=list)
    """Warnings of the attempt itself (a reading that was not one), for the record."""


def _default_backend(name: str) -> Backend:
    return get_backend(name)


def _one_line(text: str, limit: int = 500) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _tail(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return _one_line(lines[-1]) if lines else ""


def _crash_hint(backend: Backend, spec: RunSpec, code: int | None, local: bool) -> str:
    """The error's "; likely cause: ..." where the benchmark crashed and its backend knows
    why: a bare signal name tells what happened, not what to change. This machine's CPU
    flags are read only for a local device (a remote one's are not known here)."""
    sig = exit_signal(code)
    if sig is None:
        return ""
    hint = backend.crash_hint(spec, sig, local_cpu_flags() if local else None)
    return f"; likely cause: {hint}" if hint else ""


def derive_metrics(parsed: ParsedRun, spec: RunSpec) -> tuple[dict[str, float], list[str]]:
    """(metrics, test names) of a parsed run: `benchlab.metrics.derive`, the one derivation."""
    return derive_measures(
        parsed.kernel, parsed.batch, prompt_tokens=spec.prompt_tokens, extra=parsed.metrics
    )


def run_samples(parsed: ParsedRun | None, spec: RunSpec) -> dict[str, Any] | None:
    """The repeats measured inside the run, per metric (`benchlab.metrics.repeat_samples`)."""
    if parsed is None:
        return None
    return repeat_samples(parsed.kernel, spec.prompt_tokens, parsed.batch) or None


def run_identity(
    spec: RunSpec,
    parsed: ParsedRun | None,
    revision: str | None = None,
    settings: str | None = None,
) -> dict[str, Any]:
    """The record's measurement identity: the spec, overridden by what the run reported;
    `settings`: the device's (`expand.device_settings`)."""
    facts = parsed.facts if parsed is not None else None
    return spec_identity(spec, revision=revision, settings=settings, facts=facts)


def summarise_telemetry(telemetry: dict[str, Any]) -> dict[str, Any] | None:
    """The record keeps the per-channel summary; the samples stay in raw/envelope.json."""
    if not telemetry:
        return None
    summary = {key: value for key, value in telemetry.items() if key != "samples"}
    if isinstance(telemetry.get("samples"), list):
        summary["samples_n"] = len(telemetry["samples"])
    return summary


def used_metrics(
    envelope: AgentEnvelope, metrics: dict[str, float], warnings: list[str] | None = None
) -> dict[str, float]:
    """Memory and energy the device measured (`benchlab.metrics.resource_metrics`); a
    reading that is none (0 MiB of resident memory, 1e20 MiB of GPU memory, a tool's `nan`)
    is not measured, with one warning each in `warnings`."""
    duration = envelope.finished_at - envelope.started_at
    out = resource_metrics(envelope.resources, duration, metrics.get(DECODE.name), warnings)
    refused = (envelope.telemetry or {}).get("refused")
    if warnings is not None and isinstance(refused, dict):
        for channel, text in sorted(refused.items())[:8]:
            warnings.append(
                f"telemetry: {channel}: the device's tool printed {str(text)[:32]!a}; not measured"
            )
    return out


def state_warnings(
    metrics: dict[str, float], system: dict[str, Any] | None, max_cv: float
) -> tuple[bool | None, list[str]]:
    """(unstable, warnings) of a measured run: repeats that vary more than `max_cv`, and a
    device that throttled while it ran."""
    unstable, warnings = instability(metrics, max_cv) if metrics else (None, [])
    during = (system or {}).get("during_run") or {}
    if during.get("throttled"):
        reasons = "; ".join(str(r) for r in during.get("reasons") or [])
        warnings.append(f"the device throttled during the run: {reasons}")
    return unstable, warnings


class Runner:
    """Runs points of one sweep. One instance may serve many workers (it holds no per-point
    state); `_backend` and `_clock` are seams for tests."""

    def __init__(
        self,
        store: Any,
        config: SweepConfig,
        *,
        experiment: str,
        git_info: GitInfo | None = None,
        _backend: Callable[[str], Backend] | None = None,
        _clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = as_store(store)
        self.config = config
        self.experiment = experiment
        if git_info is None:
            # The checkout the store lives in; else the one the sweep was started from.
            git_info = read_git_info(self.store.root)
            if git_info.rev is None:
                git_info = read_git_info(Path.cwd())
        self.git_info = git_info
        self._backend = _backend or _default_backend
        self._clock = _clock

    # --- the attempt -------------------------------------------------------------------

    def attempt(
        self,
        spec: RunSpec,
        run_id: str,
        transport: Transport,
        *,
        attempt: int = 1,
        attempts: int = 1,
        worker: str | None = None,
        warnings: Iterable[str] = (),
    ) -> AttemptOutcome:
        """Run `spec` once on `transport`; always writes record.json; never raises for the
        point's own failure (only for a store that cannot be written)."""
        run_dir = self.store.run_dir(spec.machine_id, run_id)
        started = self._clock()
        result = self._run(spec, run_id, transport, worker)
        finished = self._clock()
        self._hold_to_contract(spec, run_id, result, started, finished)

        self._begin_writing(spec, run_id, run_dir, attempt, attempts, started, worker)
        self._write_artifacts(spec, run_id, run_dir, result, started)
        record = self._record(
            spec,
            run_id,
            result,
            attempt=attempt,
            attempts=attempts,
            worker=worker,
            warnings=list(warnings),
            started=started,
            finished=finished,
        )
        write_model(run_dir / RECORD, record, root=self.store.root)
        return AttemptOutcome(record=record, failure_kind=result.kind)

    def _hold_to_contract(
        self, spec: RunSpec, run_id: str, result: _Result, started: float, finished: float
    ) -> None:
        """The writer contract (`catalog.contract`): an ok run whose catalog line every
        reader would refuse (a benchmark's metric of 1e300, a count below zero it reported)
        is recorded as a failed `parse` run that says why, before any file is written, not
        as an ok run that every build and reader then sets aside."""
        parsed = result.parsed
        if result.kind is not None or parsed is None:
            return
        kernel = parsed.kernel.model_copy(update={"run_id": run_id})
        batch = parsed.batch.model_copy(update={"run_id": run_id})
        manifest = self._manifest(spec, run_id, parsed, {}, started)
        record = self._record(
            spec, run_id, result, attempt=1, attempts=1, worker=None, warnings=[],
            started=started, finished=finished,
        )  # fmt: skip
        problem = run_problem(manifest, record, kernel, batch)
        if problem is not None:
            result.kind = "parse"
            result.error = _one_line(
                f"its catalog line would be refused by every reader: {problem}"
            )
            result.parsed, result.metrics, result.tests = None, None, None

    def _local(self, spec: RunSpec) -> bool:
        """Whether the point ran on this machine (its device's transport is local)."""
        device = self.config.devices.get(spec.device)
        return device is not None and device.transport == "local"

    def _run(self, spec: RunSpec, run_id: str, transport: Transport, worker: str | None) -> _Result:
        result = _Result()
        stage = "build"
        try:
            backend = self._backend(spec.backend)
            concrete = self._concrete(spec, worker)
            backend.check_available(transport, concrete)
            task = self._finish_task(backend.build_task(concrete, run_id), spec, worker)
            result.task = task
            stage = "call"
            result.answer = transport.call(
                "run", task.model_dump(mode="json"), timeout=self._call_timeout(spec, task)
            )
            try:
                envelope = AgentEnvelope.model_validate(result.answer)
            except ValidationError as exc:
                raise DeviceError(
                    f"device {spec.device!r}: the agent's answer is not a run envelope: "
                    f"{_one_line(str(exc.errors()[0]['msg']))}",
                    spec.device,
                ) from None
            result.envelope = envelope
            stage = "measure"
            if envelope.timed_out:
                raise MeasurementError(
                    f"benchmark timed out after {task.timeout_s:g} s on a live device"
                )
            if envelope.exit_code != 0:
                detail = envelope.model_extra.get("error") if envelope.model_extra else None
                detail = detail or _tail(envelope.stderr) or _tail(envelope.stdout) or "no output"
                raise MeasurementError(
                    f"benchmark {exit_text(envelope.exit_code)}: {_one_line(detail)}"
                    + _crash_hint(backend, concrete, envelope.exit_code, self._local(spec))
                )
            stage = "parse"
            parsed = backend.parse(envelope, concrete, run_id)
            metrics, tests = derive_metrics(parsed, spec)
            if not metrics:
                raise ParseError("the run reported success but yielded no metrics")
            metrics = {**used_metrics(envelope, metrics, result.notes), **metrics}
            result.parsed, result.metrics, result.tests = parsed, metrics, tests
        except DeviceError as exc:
            result.kind, result.error = "transport", _one_line(str(exc))
        except MeasurementError as exc:
            result.kind, result.error = "measurement", _one_line(str(exc))
        except ParseError as exc:
            result.kind, result.error = "parse", _one_line(str(exc))
        except ConfigError as exc:
            result.kind, result.error = "config", _one_line(str(exc))
        except Exception as exc:
            # Our own code broke. Building or parsing decides which of our parts it was; a
            # transport that raised something other than DeviceError still lost the device.
            kinds: dict[str, FailureKind] = {"build": "config", "call": "transport"}
            result.kind = kinds.get(stage, "parse")
            result.error = _one_line(f"{type(exc).__name__}: {exc}")
        return result

    def _concrete(self, spec: RunSpec, worker: str | None) -> RunSpec:
        """The spec with placeholders filled for this worker (ids keep the template)."""
        values = variables(device=spec.device, experiment=self.experiment, worker=worker)
        return spec.model_copy(update={"params": substitute(spec.params, values)})

    def _finish_task(self, task: AgentTask, spec: RunSpec, worker: str | None) -> AgentTask:
        values = variables(device=spec.device, experiment=self.experiment, worker=worker)
        device = self.config.devices.get(spec.device)
        timeout = task.timeout_s
        if device is not None:
            timeout = min(timeout, device.command_timeout_s)
        return task.model_copy(
            update={
                "argv": substitute(task.argv, values),
                "env": substitute(task.env, values),
                "cwd": substitute(task.cwd, values),
                "timeout_s": timeout,
            }
        )

    def _call_timeout(self, spec: RunSpec, task: AgentTask) -> float:
        device = self.config.devices.get(spec.device)
        connect = device.connect_timeout_s if device is not None else 10.0
        return task.timeout_s + connect + CALL_GRACE_S

    # --- writing -----------------------------------------------------------------------

    def _begin_writing(
        self,
        spec: RunSpec,
        run_id: str,
        run_dir: Path,
        attempt: int,
        attempts: int,
        started: float,
        worker: str | None,
    ) -> None:
        """Mark the run dir not-ok, then clear what an earlier failed attempt left there."""
        marker = RunRecord(
            run_id=run_id,
            spec_id=spec.spec_id,
            machine_id=spec.machine_id,
            device=spec.device,
            experiment=self.experiment,
            status="failed",
            error=INTERRUPTED_ERROR.format(attempt=attempt, started=_iso(started)),
            attempt=attempt,
            attempts=attempts,
            tags=list(spec.tags),
            timings=Timings(started_at=_iso(started)),
            worker=worker,
            spec=spec,
        )
        write_model(run_dir / RECORD, marker, root=self.store.root)
        for child in run_dir.iterdir():
            if child.name == RECORD:
                continue
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()

    def _write_artifacts(
        self, spec: RunSpec, run_id: str, run_dir: Path, result: _Result, started: float
    ) -> None:
        raw = run_dir / RAW_DIR
        if result.envelope is not None:
            atomic_write_text(raw / "stdout.txt", result.envelope.stdout, root=self.store.root)
            atomic_write_text(raw / "stderr.txt", result.envelope.stderr, root=self.store.root)
            rest = result.envelope.model_dump(mode="json", exclude={"stdout", "stderr"})
            atomic_write_json(raw / "envelope.json", rest, root=self.store.root)
        elif result.answer is not None:
            atomic_write_json(raw / "envelope.json", result.answer, root=self.store.root)
        if result.task is not None:
            atomic_write_json(
                raw / "task.json", result.task.model_dump(mode="json"), root=self.store.root
            )

        artifacts: dict[str, str] = {}
        parsed = result.parsed
        if parsed is not None and result.kind is None:
            kernel = parsed.kernel.model_copy(update={"run_id": run_id})
            batch = parsed.batch.model_copy(update={"run_id": run_id})
            write_model(run_dir / KERNEL, kernel, root=self.store.root)
            write_model(run_dir / BATCH, batch, root=self.store.root)
            artifacts = {"kernel": KERNEL, "batch": BATCH}
            for name, content in sorted(parsed.extra_files.items()):
                check_id(name, "artifact file name")
                if isinstance(content, str):
                    atomic_write_text(run_dir / name, content, root=self.store.root)
                else:
                    atomic_write_json(run_dir / name, content, root=self.store.root)
                artifacts[name.rsplit(".", 1)[0]] = name
        write_model(
            run_dir / MANIFEST,
            self._manifest(spec, run_id, parsed, artifacts, started),
            root=self.store.root,
        )
        status = "ok" if result.kind is None else f"failed ({result.kind})"
        command = result.task.argv if result.task is not None else None
        self._write_readme(spec, run_id, run_dir, status, _iso(started), command)

    def _write_readme(
        self,
        spec: RunSpec,
        run_id: str,
        run_dir: Path,
        status: str,
        started_at: str,
        command: list[str] | None,
    ) -> None:
        """README.md: how the run was made and how to make it again (benchmarks.readme)."""
        declared = self.config.matrix.get("repeats") or self.config.policies.repeats
        story = RunStory(
            spec=spec,
            run_id=run_id,
            status=status,
            started_at=started_at,
            command=command,
            config_path=self.config_path,
            matrix=self.config.matrix,
            next_repeat=max(int(declared), (spec.repeat or 0) + 1),
        )
        atomic_write_text(run_dir / README, render(story), root=self.store.root)

    @cached_property
    def config_path(self) -> str | None:
        """The config path the sweep session was started with (state.json), read once."""
        try:
            path = read_json(self.store.sweep_dir(self.experiment) / SWEEP_STATE)["config_path"]
        except (BenchlabError, KeyError, TypeError):
            return None
        return path if isinstance(path, str) else None

    def _manifest(
        self,
        spec: RunSpec,
        run_id: str,
        parsed: ParsedRun | None,
        artifacts: dict[str, str],
        started: float,
    ) -> RunManifest:
        display = spec.model
        quantization = None
        if parsed is not None:
            if slug(parsed.kernel.model) == slug(spec.model):
                display = parsed.kernel.model
            if parsed.kernel.precision != spec.precision:
                quantization = parsed.kernel.precision
        config: dict[str, Any] = {
            "device": spec.device,
            "threads": spec.threads,
            "prompt_tokens": spec.prompt_tokens,
            "gen_tokens": spec.gen_tokens,
            "batch_sizes": spec.batch_sizes,
            "params": spec.params,
        }
        return RunManifest(
            run_id=run_id,
            machine_id=spec.machine_id,
            timestamp=_iso(started),
            git=self.git_info,
            harness=HarnessInfo(name="benchlab", version=__version__),
            model=ModelInfo(name=display, precision=spec.precision, quantization=quantization),
            config={key: value for key, value in config.items() if value not in (None, [], {})},
            tags=_tags(spec),
            artifacts=artifacts,
            backend=spec.backend,
            mode=spec.mode,
            spec_id=spec.spec_id,
            experiment=self.experiment,
        )

    def _record(
        self,
        spec: RunSpec,
        run_id: str,
        result: _Result,
        *,
        attempt: int,
        attempts: int,
        worker: str | None,
        warnings: list[str],
        started: float,
        finished: float,
    ) -> RunRecord:
        envelope = result.envelope
        duration = finished - started
        if envelope is not None and envelope.finished_at >= envelope.started_at:
            duration = envelope.finished_at - envelope.started_at
        system = envelope.system if envelope is not None else None
        unstable, more = state_warnings(result.metrics or {}, system, self.config.policies.max_cv)
        return RunRecord(
            run_id=run_id,
            spec_id=spec.spec_id,
            machine_id=spec.machine_id,
            device=spec.device,
            experiment=self.experiment,
            status="ok" if result.kind is None else "failed",
            failure_kind=result.kind,
            error=result.error,
            warnings=[*warnings, *result.notes, *more],
            attempt=attempt,
            attempts=attempts,
            tags=[*_tags(spec), *([UNSTABLE_TAG] if unstable else [])],
            timings=Timings(
                started_at=_iso(started),
                finished_at=_iso(finished),
                duration_s=round(duration, 3),
            ),
            worker=worker,
            metrics=dict(result.metrics or {}),
            tests=result.tests or [],
            metric_samples=run_samples(result.parsed, spec) if result.kind is None else None,
            identity=run_identity(
                spec, result.parsed, self.config.revision, device_settings(self.config, spec.device)
            ),
            telemetry=summarise_telemetry(envelope.telemetry) if envelope else None,
            system=system,
            unstable=unstable,
            spec=spec,
        )

    # --- holes -------------------------------------------------------------------------

    def write_hole(
        self,
        spec: RunSpec,
        run_id: str,
        reason: str,
        *,
        failure_kind: FailureKind | None = "transport",
    ) -> RunRecord:
        """Record a point that was never attempted, loudly, so resume picks it up.

        An existing ok record is never replaced: a hole must not erase a measurement.
        """
        run_dir = self.store.run_dir(spec.machine_id, run_id)
        path = run_dir / RECORD
        if path.exists():
            try:
                existing = RunRecord.model_validate(read_json(path))
            except (BenchlabError, ValueError):
                existing = None
            if existing is not None and existing.status == "ok":
                return existing
        now = _iso(self._clock())
        record = RunRecord(
            run_id=run_id,
            spec_id=spec.spec_id,
            machine_id=spec.machine_id,
            device=spec.device,
            experiment=self.experiment,
            status="failed",
            failure_kind=failure_kind,
            error=f"{HOLE_ERROR_PREFIX}: {reason.rstrip().rstrip('.')}. "
            "Re-run to retry this point.",
            warnings=[HOLE_WARNING],
            attempt=0,
            attempts=self.config.policies.retries.attempts,
            tags=_tags(spec),
            timings=Timings(started_at=now, finished_at=now, duration_s=0.0),
            identity=run_identity(
                spec, None, self.config.revision, device_settings(self.config, spec.device)
            ),
            spec=spec,
        )
        self._write_readme(spec, run_id, run_dir, "not attempted (a hole)", now, None)
        write_model(path, record, root=self.store.root)
        return record


def _tags(spec: RunSpec) -> list[str]:
    tags = list(dict.fromkeys(spec.tags))
    if spec.failover_from and f"failover-from:{spec.failover_from}" not in tags:
        tags.append(f"failover-from:{spec.failover_from}")
    return tags


def _iso(stamp: float) -> str:
    return utc_iso(datetime.fromtimestamp(stamp, tz=timezone.utc))
