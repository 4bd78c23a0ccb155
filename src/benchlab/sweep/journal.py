"""What a sweep has already done: its stamp (state.json) and which points are complete.

The sweep stamp is fixed in `runs/sweeps/<experiment>/state.json` when a sweep first starts;
a resumed sweep reuses it, so every point keeps the same run id across restarts and a killed
sweep resumes with no duplicate work. `--fresh` writes a new stamp (always later than the old
one, even within the same second), which starts a new set of run ids.

A point is done only if its record exists and says `ok`. A run dir without any record but with
every REQUIRED file (manifest, kernel, batch) is an imported or hand-made run and counts as
done. The runner writes a failed "interrupted" record before it writes any artifact, so a
sweep killed half-way through writing a run can never pass for an imported one.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from benchlab.errors import StoreError
from benchlab.ids import STAMP_FORMAT, run_id, sweep_stamp, utc_iso
from benchlab.layout import (
    RECORD,
    REQUIRED_RUN_FILES,
    SWEEP_STATE,
    Store,
    read_json,
    read_model,
    write_model,
)
from benchlab.models import RunRecord, RunSpec, SweepState


def as_store(store: Store | Path | str) -> Store:
    """Accept a Store or its root path."""
    return store if isinstance(store, Store) else Store(Path(store))


class SweepJournal:
    """The resume state of one experiment in one store."""

    def __init__(self, store: Store | Path | str, experiment: str) -> None:
        self.store = as_store(store)
        self.experiment = experiment
        self.dir = self.store.sweep_dir(experiment)
        self.state_path = self.dir / SWEEP_STATE
        self._stamp: str | None = None

    @property
    def stamp(self) -> str:
        if self._stamp is None:
            state = self.read_state()
            if state is None:
                raise StoreError(f"{self.state_path}: sweep not started; call begin() first")
            self._stamp = state.stamp
        return self._stamp

    def read_state(self) -> SweepState | None:
        """The saved state, or None when this experiment never started in this store."""
        if not self.state_path.exists():
            return None
        return read_model(self.state_path, SweepState)

    def begin(
        self, fresh: bool, config_path: str | Path | None, *, now: datetime | None = None
    ) -> str:
        """Fix (or reuse) the sweep stamp; returns it. Only `fresh` or a first start writes."""
        state = self.read_state()
        if state is not None and not fresh:
            self._stamp = state.stamp
            return state.stamp
        moment = now or datetime.now(timezone.utc)
        stamp = sweep_stamp(moment)
        if state is not None and stamp <= state.stamp:
            # A fresh sweep must never reuse the ids of the one it replaces.
            previous = datetime.strptime(state.stamp, STAMP_FORMAT).replace(tzinfo=timezone.utc)
            moment = previous + timedelta(seconds=1)
            stamp = sweep_stamp(moment)
        write_model(
            self.state_path,
            SweepState(
                experiment=self.experiment,
                stamp=stamp,
                started_at=utc_iso(moment),
                config_path=str(config_path) if config_path is not None else None,
            ),
        )
        self._stamp = stamp
        return stamp

    def use_stamp(self, stamp: str) -> None:
        """Read-only use (dry runs): answer run_id/is_done for a known stamp, write nothing."""
        self._stamp = stamp

    def run_id(self, spec: RunSpec) -> str:
        return run_id(spec.spec_id, self.stamp)

    def run_dir(self, spec: RunSpec) -> Path:
        return self.store.run_dir(spec.machine_id, self.run_id(spec))

    def record(self, spec: RunSpec) -> RunRecord | None:
        """The point's record, or None when there is none or it cannot be read."""
        path = self.run_dir(spec) / RECORD
        if not path.exists():
            return None
        try:
            return RunRecord.model_validate(read_json(path))
        except (StoreError, ValueError):
            return None

    def is_done(self, spec: RunSpec) -> bool:
        """Done = an ok record, or no record at all but every REQUIRED file (an import)."""
        run_dir = self.run_dir(spec)
        record_path = run_dir / RECORD
        if record_path.exists():
            record = self.record(spec)
            return record is not None and record.status == "ok"
        return all((run_dir / name).is_file() for name in REQUIRED_RUN_FILES)

    def pending(self, specs: list[RunSpec]) -> list[RunSpec]:
        """The points still to run, in the given order."""
        return [spec for spec in specs if not self.is_done(spec)]
