"""The sequential runner: the reference implementation and the default.

One point at a time, in the config's order, each on its own device through one transport per
device (opened on first use, reopened after a transport failure). Only transport failures
are retried, up to `policies.retries.attempts`, with a written-down warning on the record
that finally comes back and one line per failure in `retries.jsonl`. Everything else is a
result and is recorded as such.

Resume, the locks and retries.jsonl are the session's (session.py, shared with the
concurrent runner): a re-run executes exactly the points that have no ok record and touches
none of the others; a stop request (`bench stop`) is honoured between points.

Between points it also takes injected points that are due (inject.py) and, under a time
budget (budget.py), moves on to the next round when a round is done and starts nothing that
cannot finish in time. Every outcome is appended to the machine's history (history.py).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchlab.devices.base import Transport
from benchlab.models import DeviceConfig, RunRecord, RunSpec, SweepConfig
from benchlab.sweep.attempt import Runner, retry_warning
from benchlab.sweep.budget import MAX_ROUNDS, Budget, Durations, Rounds
from benchlab.sweep.expand import expand, order_specs
from benchlab.sweep.history import DeviceHistory, point_key
from benchlab.sweep.inject import InjectedQueue, pending_path, refusal, run_command
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
    budget: Budget | None = None,
    _opener: Opener | None = None,
    _backend: Callable[[str], Any] | None = None,
    _sleep: Callable[[float], None] = time.sleep,
    _clock: Callable[[], float] = time.monotonic,
    _git_info: Any = None,
) -> SweepResult:
    """Run every pending point of `config` one after another; return all records.

    With `budget`, round after round (repeat k in round k) until its deadline.
    """
    store = as_store(store)
    progress = progress if progress is not None else QuietProgress()
    began = _clock()
    rounds = Rounds(config, str(config_path or "sweep config")) if budget else None
    specs = rounds.points(0) if rounds else order_specs(expand(config), config.policies)
    result = SweepResult(experiment=config.experiment, total=len(specs))
    transports = _Transports(config, _opener or _open_transport)
    with SweepSession(
        store,
        config,
        config_path,
        specs=specs,
        fresh=fresh,
        progress=progress,
        result=result,
        hold_all=budget is not None,
    ) as session:
        runner = session.guard(
            Runner(
                store, config, experiment=config.experiment, git_info=_git_info, _backend=_backend
            )
        )
        history = DeviceHistory(store, config.experiment)
        injected = InjectedQueue(pending_path(store, config.experiment), config.experiment)
        durations = Durations.from_store(store, config) if budget else Durations()
        queue: deque[RunSpec] = deque(session.pending)
        seen = {session.run_id(spec) for spec in queue}
        round_index = 0
        _call(progress, "start", len(queue))
        index = 0
        try:
            while True:
                for spec in _due(injected, session, seen, progress):
                    queue.appendleft(spec)
                if session.stop_requested():
                    result.stopped = True
                    progress.event(
                        f"STOP requested: {len(queue)} point(s) left pending; re-run to resume"
                    )
                    break
                if budget is not None and budget.expired():
                    result.deadline_reached = True
                    break
                if not queue:
                    if rounds is None or round_index + 1 >= MAX_ROUNDS:
                        break
                    round_index += 1
                    fresh_round = [
                        spec
                        for spec in rounds.points(round_index)
                        if session.run_id(spec) not in seen and not session.journal.is_done(spec)
                    ]
                    seen.update(session.run_id(spec) for spec in fresh_round)
                    queue.extend(fresh_round)
                    if fresh_round:
                        progress.event(
                            f"ROUND {round_index}: {len(fresh_round)} point(s), "
                            f"{budget.left() if budget else 0:.0f} s of the budget left"
                        )
                    continue
                spec = queue[0]
                if budget is not None and not budget.fits(durations.estimate(spec)):
                    result.deadline_reached = True
                    progress.event(
                        f"DEADLINE {spec.spec_id} usually takes "
                        f"{durations.estimate(spec) or 0:.1f} s, more than the "
                        f"{budget.left():.1f} s (+ {budget.grace_s:g} s grace) left; not started"
                    )
                    break
                queue.popleft()
                index += 1
                _call(progress, "point_started", spec)
                record = _run_point(runner, session, transports, spec, config, progress, _sleep)
                result.records.append(record)
                durations.add(spec, record.timings.duration_s if record.status == "ok" else None)
                _remember(history, spec, record, progress)
                progress.point_done(index, index + len(queue), spec, record)
        finally:
            transports.close_all()
        result.rounds = round_index + 1 if budget else 0
        result.left_pending = len(queue)
        result.injected_waiting = injected.waiting()
        result.total = max(result.total, result.skipped + index + len(queue))
        for warning in injected.warnings:
            progress.event(f"WARNING {warning}")
    result.elapsed_s = _clock() - began
    return result


def _due(
    injected: InjectedQueue, session: SweepSession, seen: set[str], progress: Any
) -> list[RunSpec]:
    """Injected points whose time has come, that this session may run and has not queued."""
    out = []
    for spec in injected.poll():
        run_id = session.run_id(spec)
        if run_id in seen or session.journal.is_done(spec):
            continue
        reason = _not_runnable(session, spec)
        if reason is not None:
            command = run_command(session.config_path, concurrent=False)
            progress.event(refusal(spec, reason, command))
            continue
        seen.add(run_id)
        progress.event(f"INJECT {spec.spec_id} queued next on {spec.device}")
        out.append(spec)
    return list(reversed(out))  # appendleft one by one keeps the file's order


def _not_runnable(session: SweepSession, spec: RunSpec) -> str | None:
    """Why this session cannot run an injected point, in words; None when it can."""
    device = session.config.devices.get(spec.device)
    if device is None:
        return f"device {spec.device!r} is not in the config"
    if (device.machine_id or spec.device) != spec.machine_id:
        return (
            f"it was injected for machine {spec.machine_id!r}; device {spec.device!r} is "
            f"machine {device.machine_id or spec.device!r} in the config now"
        )
    if spec.machine_id not in session.machines:
        return f"this session does not hold machine {spec.machine_id!r}"
    return None


def _remember(history: DeviceHistory, spec: RunSpec, record: Any, progress: Any) -> None:
    """One history line per point; history is advisory, so a full disk must not sink a run."""
    ok = record.status == "ok"
    try:
        history.record(
            spec.machine_id,
            spec.device,
            "ok" if ok else "failed",
            record.run_id,
            point=point_key(spec) if ok else None,
            duration_s=record.timings.duration_s if ok else None,
        )
        history.flush()
    except OSError as exc:
        progress.event(f"WARNING device history of {spec.machine_id} not written: {exc}")


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
            machine_id=spec.machine_id,
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
