"""The sequential runner: the reference implementation and the default.

One point at a time, in the config's order, each on its own device through one transport per
device (opened on first use, reopened after a transport failure). Only transport failures
are retried, up to `policies.retries.attempts`, with a written-down warning on the record
that finally comes back and one line per failure in `retries.jsonl`. Everything else is a
result and is recorded as such.

Resume, the locks and retries.jsonl are the session's (session.py, shared with the
concurrent runner): a re-run executes exactly the points that have no ok record and touches
none of the others; a stop request (`bench stop`) is honoured between points.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchlab.devices.base import Transport
from benchlab.models import DeviceConfig, RunRecord, RunSpec, SweepConfig
from benchlab.sweep.attempt import Runner, retry_warning
from benchlab.sweep.expand import expand, order_specs
from benchlab.sweep.journal import as_store
from benchlab.sweep.placeholders import resolve_device, worker_instance_id
from benchlab.sweep.progress import QuietProgress
from benchlab.sweep.result import SweepResult
from benchlab.sweep.session import SweepSession

__all__ = ["SweepResult", "run_sweep"]

Opener = Callable[[str, DeviceConfig], Transport]


def _open_transport(device_id: str, config: DeviceConfig) -> Transport:
    from benchlab.devices import open_transport

    return open_transport(device_id, config)


class _LazyTransport(Transport):
    """Opens the real transport on first call, so a device that cannot even be opened fails
    inside an attempt (classified transport, retried) rather than crashing the sweep."""

    def __init__(self, device_id: str, config: DeviceConfig, opener: Opener) -> None:
        super().__init__(device_id)
        self.config = config
        self._opener = opener
        self._inner: Transport | None = None

    def call(self, verb: str, payload: dict[str, Any] | None = None, *, timeout: float) -> Any:
        if self._inner is None:
            self._inner = self._opener(self.device_id, self.config)
        return self._inner.call(verb, payload, timeout=timeout)

    def close(self) -> None:
        if self._inner is not None:
            inner, self._inner = self._inner, None
            inner.close()


class _Transports:
    """One transport per device for the single sequential worker of each device."""

    def __init__(self, config: SweepConfig, opener: Opener) -> None:
        self.config = config
        self.opener = opener
        self.open: dict[str, _LazyTransport] = {}

    def get(self, device: str) -> _LazyTransport:
        if device not in self.open:
            resolved = resolve_device(
                self.config.devices[device],
                device=device,
                experiment=self.config.experiment,
                worker=worker_instance_id(device, 0),
            )
            self.open[device] = _LazyTransport(device, resolved, self.opener)
        return self.open[device]

    def drop(self, device: str) -> None:
        transport = self.open.pop(device, None)
        if transport is not None:
            _close_quietly(transport)

    def close_all(self) -> None:
        for device in list(self.open):
            self.drop(device)


def _close_quietly(transport: Transport) -> None:
    try:
        transport.close()
    except Exception:  # closing a broken connection must not hide the sweep's own outcome
        pass


def run_sweep(
    store: Any,
    config: SweepConfig,
    config_path: str | Path | None,
    *,
    fresh: bool = False,
    progress: Any = None,
    _opener: Opener | None = None,
    _backend: Callable[[str], Any] | None = None,
    _sleep: Callable[[float], None] = time.sleep,
    _clock: Callable[[], float] = time.monotonic,
    _git_info: Any = None,
) -> SweepResult:
    """Run every pending point of `config` one after another; return all records."""
    store = as_store(store)
    progress = progress if progress is not None else QuietProgress()
    began = _clock()
    specs = order_specs(expand(config), config.policies)
    result = SweepResult(experiment=config.experiment, total=len(specs))
    transports = _Transports(config, _opener or _open_transport)
    with SweepSession(
        store, config, config_path, specs=specs, fresh=fresh, progress=progress, result=result
    ) as session:
        pending = session.pending
        runner = session.guard(
            Runner(
                store, config, experiment=config.experiment, git_info=_git_info, _backend=_backend
            )
        )
        _call(progress, "start", len(pending))
        try:
            for index, spec in enumerate(pending, 1):
                if session.stop_requested():
                    result.stopped = True
                    progress.event(
                        f"STOP requested: {len(pending) - index + 1} point(s) left pending; "
                        "re-run to resume"
                    )
                    break
                _call(progress, "point_started", spec)
                record = _run_point(runner, session, transports, spec, config, progress, _sleep)
                result.records.append(record)
                progress.point_done(index, len(pending), spec, record)
        finally:
            transports.close_all()
    result.elapsed_s = _clock() - began
    return result


def _run_point(
    runner: Any,
    session: SweepSession,
    transports: _Transports,
    spec: RunSpec,
    config: SweepConfig,
    progress: Any,
    sleep: Callable[[float], None],
) -> RunRecord:
    retry = config.policies.retries
    run_id = session.run_id(spec)
    worker = worker_instance_id(spec.device, 0)
    for attempt in range(1, retry.attempts + 1):
        warnings = [retry_warning(attempt, retry.attempts, spec.device)] if attempt > 1 else []
        outcome = runner.attempt(
            spec,
            run_id,
            transports.get(spec.device),
            attempt=attempt,
            attempts=retry.attempts,
            worker=worker,
            warnings=warnings,
        )
        if outcome.failure_kind != "transport":
            return outcome.record  # type: ignore[no-any-return]
        last = attempt == retry.attempts
        session.log.append(
            kind="transport",
            device=spec.device,
            spec_id=spec.spec_id,
            run_id=run_id,
            attempt=attempt,
            attempts=retry.attempts,
            error=outcome.record.error,
            action="gave-up" if last else "retry",
            worker=worker,
        )
        transports.drop(spec.device)
        if last:
            return outcome.record  # type: ignore[no-any-return]
        delay = retry.backoff_s * (2 ** (attempt - 1))
        progress.event(
            f"RETRY  {spec.device} attempt {attempt} of {retry.attempts} failed (transport): "
            f"{outcome.record.error}; retrying in {delay:g} s"
        )
        sleep(delay)
    raise AssertionError("unreachable: the retry loop always returns")


def _call(progress: Any, name: str, *args: Any) -> None:
    method = getattr(progress, name, None)
    if callable(method):
        method(*args)
