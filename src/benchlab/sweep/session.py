"""One session of one sweep: what `bench run` and `bench run --concurrent` share.

The scheduler (scheduler.py, sequential or concurrent) opens one `SweepSession` and only
schedules:

    with SweepSession(store, config, config_path, specs=specs, fresh=fresh, ...) as session:
        for spec in session.pending: ...            # the scheduler's order and workers
        session.log.append(kind="transport", ...)   # the one retries.jsonl writer

On entry, in this order (each step relies on the one before):

1. the experiment's lock (`runs/sweeps/<experiment>/lock`; one instance: ARCHITECTURE.md,
   The scheduler);
2. a stale stop request is cleared;
3. the machines the pending points (and their failover targets) need are locked
   (`runs/devices/<machine>.lock`, shared by every experiment of the workspace), before any
   stamp is written, so a refused sweep leaves no state behind; the due injected points
   (pending.jsonl) count as pending, so a re-run of a finished sweep runs them;
4. the stamp is fixed or reused (state.json); a new stamp that would give a point the run id
   of another experiment's run dir is moved on a second, as `--fresh` does;
5. every point's run dir is checked: one that holds another experiment's (or another spec's)
   record is an error naming both, never something to overwrite;
6. the pending points, and the "resuming" line;
7. earlier sessions of schedule.json are kept as history.

On exit the locks are released and the stop request is cleared: it was meant for this session.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from benchlab.errors import StoreError
from benchlab.layout import MANIFEST, RECORD, Store, read_json
from benchlab.models import RunRecord, RunSpec, SweepConfig
from benchlab.sweep.inject import due_points, pending_path
from benchlab.sweep.journal import SweepJournal
from benchlab.sweep.lock import DeviceLocks, SweepLock, clear_stop, stop_requested
from benchlab.sweep.result import SweepResult
from benchlab.sweep.schedule_log import ScheduleLog

STAMP_TRIES = 100
"""How many seconds a new stamp may be moved on to find run ids no other experiment holds."""


def machines_needed(config: SweepConfig, specs: Iterable[RunSpec]) -> set[str]:
    """The machine ids `specs` run on, and those of their devices' failover targets."""
    devices = {spec.device for spec in specs}
    for device in list(devices):
        devices.update(config.devices[device].failover_to)
    return {config.devices[device].machine_id or device for device in devices}


def foreign_owner(store: Store, spec: RunSpec, run_id: str, experiment: str) -> str | None:
    """Who else holds `run_id`'s run dir, in words; None when it is free or this point's own.

    Read from the record, else the manifest (an interrupted or imported run); a field that is
    not there does not count against the point.
    """
    run_dir = store.run_dir(spec.machine_id, run_id)
    for name in (RECORD, MANIFEST):
        path = run_dir / name
        if not path.is_file():
            continue
        try:
            data = read_json(path)
        except (StoreError, ValueError):
            return f"an unreadable {name}"
        if not isinstance(data, dict):
            return f"an unreadable {name}"
        other_experiment = data.get("experiment")
        other_spec = data.get("spec_id")
        if (other_experiment and other_experiment != experiment) or (
            other_spec and other_spec != spec.spec_id
        ):
            return f"experiment {other_experiment!r} (spec {other_spec})"
        return None
    return None


class GuardedRunner:
    """A runner that refuses to write into a run dir another experiment or spec owns.

    The session checks every point on entry; this catches what it cannot see then: a point
    moved by failover, or a run dir that appeared while the sweep ran.
    """

    def __init__(self, runner: Any, session: SweepSession) -> None:
        self._runner = runner
        self._session = session

    def attempt(self, spec: RunSpec, run_id: str, *args: Any, **kwargs: Any) -> Any:
        self._session.check_run_dir(spec, run_id)
        return self._runner.attempt(spec, run_id, *args, **kwargs)

    def write_hole(self, spec: RunSpec, run_id: str, *args: Any, **kwargs: Any) -> RunRecord:
        self._session.check_run_dir(spec, run_id)
        record: RunRecord = self._runner.write_hole(spec, run_id, *args, **kwargs)
        return record

    def __getattr__(self, name: str) -> Any:
        return getattr(self._runner, name)


class SweepSession:
    """The lock, state, journal and logs of one run of one experiment (a context manager)."""

    def __init__(
        self,
        store: Store,
        config: SweepConfig,
        config_path: str | Path | None,
        *,
        specs: list[RunSpec],
        fresh: bool,
        progress: Any,
        result: SweepResult,
        journal: Any = None,
        hold_all: bool = False,
    ) -> None:
        self.store = store
        self.config = config
        self.config_path = config_path
        self.experiment = config.experiment
        self.specs = specs
        self.fresh = fresh
        self.progress = progress
        self.result = result
        self.journal = journal if journal is not None else SweepJournal(store, self.experiment)
        self.dir = store.sweep_dir(self.experiment)
        self.log = ScheduleLog(self.dir)
        self.pending: list[RunSpec] = []
        self._lock = SweepLock(store, self.experiment)
        self._devices: DeviceLocks | None = None
        self.hold_all = hold_all
        """Lock every machine of `specs`, pending or not: a time budget runs later rounds
        (and injected points) on machines whose first-round points are all done."""
        self.machines: set[str] = set()
        """The machine ids this session holds; only these may be measured by it."""

    # --- entry and exit -------------------------------------------------------------------

    def __enter__(self) -> SweepSession:
        self._lock.acquire()
        try:
            self._warn(self._lock.warnings)
            clear_stop(self.store, self.experiment)
            wanted = self.specs if self.hold_all else self._maybe_pending()
            injected = self._injected_due()
            self.machines = machines_needed(self.config, [*wanted, *injected])
            self._devices = DeviceLocks(self.store, self.machines, self.experiment)
            self._devices.acquire()
            self._warn(self._devices.warnings)
            self.result.stamp = self._begin()
            self._check_all()
            self.pending = [spec for spec in self.specs if not self.journal.is_done(spec)]
            self.result.skipped = len(self.specs) - len(self.pending)
            if self.result.skipped:
                self.progress.event(
                    f"resuming {self.experiment} ({self.result.stamp}): {self.result.skipped} "
                    f"of {len(self.specs)} point(s) already done, {len(self.pending)} to run"
                    + (f" and {len(injected)} injected" if injected else "")
                )
            self.log.load_history()
        except BaseException:
            self._release()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._release()

    def _release(self) -> None:
        try:
            if self._devices is not None:
                self._devices.release()
            clear_stop(self.store, self.experiment)
        finally:
            self._lock.release()

    def _warn(self, warnings: list[str]) -> None:
        for warning in warnings:
            self.result.warnings.append(warning)
            self.progress.event(f"WARNING {warning}")

    def _maybe_pending(self) -> list[RunSpec]:
        """The points a resume would run, read before any stamp is written (all, when new)."""
        read_state = getattr(self.journal, "read_state", None)
        state = read_state() if callable(read_state) else None
        if state is None or self.fresh:
            return list(self.specs)
        self.journal.use_stamp(state.stamp)
        return [spec for spec in self.specs if not self.journal.is_done(spec)]

    def _injected_due(self) -> list[RunSpec]:
        """Due injected points of a device of the config that are not done yet (all of
        them when the sweep is new or fresh): their machines are the session's too."""
        specs = [
            spec
            for spec in due_points(pending_path(self.store, self.experiment), self.experiment)
            if spec.device in self.config.devices
        ]
        read_state = getattr(self.journal, "read_state", None)
        state = read_state() if callable(read_state) else None
        if state is None or self.fresh:
            return specs
        self.journal.use_stamp(state.stamp)
        return [spec for spec in specs if not self.journal.is_done(spec)]

    def _begin(self) -> str:
        """Fix the stamp; a new one is moved on while another experiment holds its run ids."""
        read_state = getattr(self.journal, "read_state", None)
        new = self.fresh or not callable(read_state) or read_state() is None
        stamp: str = self.journal.begin(self.fresh, self.config_path)
        if not new or not isinstance(self.journal, SweepJournal):
            return stamp
        for _ in range(STAMP_TRIES):
            if self._first_foreign() is None:
                return stamp
            stamp = self.journal.begin(True, self.config_path)
        return stamp  # still taken: _check_all says by whom

    # --- run dirs -------------------------------------------------------------------------

    def _first_foreign(self) -> tuple[RunSpec, str, str] | None:
        for spec in self.specs:
            run_id = self.journal.run_id(spec)
            owner = foreign_owner(self.store, spec, run_id, self.experiment)
            if owner is not None:
                return spec, run_id, owner
        return None

    def _check_all(self) -> None:
        found = self._first_foreign()
        if found is not None:
            spec, run_id, owner = found
            raise StoreError(self._refusal(spec, run_id, owner))

    def check_run_dir(self, spec: RunSpec, run_id: str) -> None:
        """StoreError when `run_id`'s run dir belongs to another experiment or spec."""
        owner = foreign_owner(self.store, spec, run_id, self.experiment)
        if owner is not None:
            raise StoreError(self._refusal(spec, run_id, owner))

    def _refusal(self, spec: RunSpec, run_id: str, owner: str) -> str:
        path = self.store.run_dir(spec.machine_id, run_id)
        return (
            f"{path}: run dir of {owner}; experiment {self.experiment!r} (spec "
            f"{spec.spec_id}) would overwrite it: re-run with --fresh for a new stamp"
        )

    # --- what the runners use --------------------------------------------------------------

    def run_id(self, spec: RunSpec) -> str:
        run_id: str = self.journal.run_id(spec)
        return run_id

    def stop_requested(self) -> bool:
        return stop_requested(self.store, self.experiment)

    def guard(self, runner: Any) -> GuardedRunner:
        return GuardedRunner(runner, self)
