"""One sweep per experiment at a time, and a kill switch that works from any machine.

`runs/sweeps/<experiment>/lock` holds the pid and host of the sweep that owns the experiment
(ARCHITECTURE.md, The scheduler: one instance). It is created complete and exclusively (written
to a temp file, then hard-linked into place, which fails if a lock exists), so no reader ever
sees a half-written lock. A lock left by a dead process on this same host is taken over with a
warning; a lock from another host cannot be checked and is respected.

`runs/devices/<machine-id>.lock` is the same kind of lock for one machine, shared by every
experiment of the workspace: two sweeps measuring one machine at once measure each other
(a Pi given two heavy jobs hung), and they file their run dirs under the same
machine. A second sweep that needs a held machine is refused, naming the holder, rather than
left waiting: one instance per workspace means refusing the second, and a refused
`dvc repro` says at once why, where a waiting one would sit behind a sweep of unknown length.

`runs/sweeps/<experiment>/stop` is the stop request (`bench stop EXPERIMENT`): the scheduler
checks it at least every second, lets in-flight points finish and leaves the rest pending.
Because it is a file in the shared workspace it works where it is unclear which computer the
sweep runs on (a simple kill mechanism).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

from benchlab.errors import StoreError
from benchlab.ids import check_id, utc_iso
from benchlab.layout import LOCK, STOP_REQUEST, Store, atomic_write_json
from benchlab.runtime.locks import ExclusiveFile, holder_is_alive, read_holder

DEVICES_DIR = "devices"
"""`runs/devices/`: the device locks (layout.py owns the store's other names)."""


class SweepLock(ExclusiveFile):
    """Hold `runs/sweeps/<experiment>/lock` for the life of a sweep (a context manager)."""

    def __init__(self, store: Store, experiment: str) -> None:
        self.experiment = experiment
        super().__init__(store.sweep_dir(experiment) / LOCK, repr(experiment))

    def _refusal(self, holder: dict[str, Any]) -> str:
        return (
            f"{self.path}: experiment {self.experiment!r} is already running "
            f"({self._describe(holder) if holder else 'unreadable lock'}); wait "
            f"for it, stop it with `bench stop {self.experiment}`, or remove the "
            "lock if that sweep is gone"
        )

    def __enter__(self) -> SweepLock:
        return self.acquire()  # type: ignore[no-any-return]

    def __exit__(self, *exc: object) -> None:
        self.release()


def device_lock_path(store: Store, machine_id: str) -> Path:
    """`runs/devices/<machine-id>.lock`: one per machine, shared by every experiment."""
    return store.runs_dir / DEVICES_DIR / f"{check_id(machine_id, 'machine id')}.lock"


class DeviceLock(ExclusiveFile):
    """One machine measured by one sweep at a time, whatever the experiment.

    Keyed by machine id, not device id: two device ids on one machine (a host and its pods)
    are one thing measured, and the machine id is what run dirs are filed under, so two
    experiments that share it would also share run dirs.
    """

    def __init__(self, store: Store, machine_id: str, experiment: str) -> None:
        self.machine_id = machine_id
        self.experiment = experiment
        super().__init__(
            device_lock_path(store, machine_id),
            f"machine {machine_id!r}",
            {"experiment": experiment, "machine_id": machine_id},
        )

    def _refusal(self, holder: dict[str, Any]) -> str:
        other = holder.get("experiment", "?")
        return (
            f"{self.path}: machine {self.machine_id!r} is being measured by experiment "
            f"{other!r} ({self._describe(holder) if holder else 'unreadable lock'}); two "
            "sweeps on one machine measure their contention, not the machine: wait for it, "
            f"stop it with `bench stop {other}`, or remove the lock if that sweep is gone"
        )


class DeviceLocks:
    """The device locks of one sweep, taken in sorted order, all or none.

    Sorted order means two sweeps that want overlapping machines cannot each hold one the
    other needs; all-or-none means a refused sweep leaves no lock behind.
    """

    def __init__(self, store: Store, machine_ids: set[str], experiment: str) -> None:
        self.locks = [DeviceLock(store, m, experiment) for m in sorted(machine_ids)]
        self.warnings: list[str] = []

    def acquire(self) -> DeviceLocks:
        taken: list[DeviceLock] = []
        try:
            for lock in self.locks:
                lock.acquire()
                taken.append(lock)
                self.warnings.extend(lock.warnings)
        except BaseException:
            for lock in reversed(taken):
                lock.release()
            raise
        return self

    def release(self) -> None:
        for lock in reversed(self.locks):
            lock.release()


def stop_path(store: Store, experiment: str) -> Path:
    return store.sweep_dir(experiment) / STOP_REQUEST


def stop_requested(store: Store, experiment: str) -> bool:
    return stop_path(store, experiment).exists()


def clear_stop(store: Store, experiment: str) -> None:
    stop_path(store, experiment).unlink(missing_ok=True)


def request_stop(store: Store, experiment: str) -> dict[str, Any]:
    """Leave a stop request for a running sweep; StoreError when the experiment is not running."""
    directory = store.sweep_dir(experiment)
    holder = read_holder(directory / LOCK)
    if not holder or not holder_is_alive(holder):
        raise StoreError(
            f"{directory / LOCK}: experiment {experiment!r} is not running; nothing to stop"
        )
    request = {"host": socket.gethostname(), "pid": os.getpid(), "requested_at": utc_iso()}
    atomic_write_json(directory / STOP_REQUEST, request)
    return holder
