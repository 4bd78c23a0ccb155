"""One sweep per experiment at a time, and a kill switch that works from any machine.

`runs/sweeps/<experiment>/lock` holds the pid and host of the sweep that owns the experiment
(seed 004: "only one instance per workspace"). It is created complete and exclusively (written
to a temp file, then hard-linked into place, which fails if a lock exists), so no reader ever
sees a half-written lock. A lock left by a dead process on this same host is taken over with a
warning; a lock from another host cannot be checked and is respected.

`runs/devices/<machine-id>.lock` is the same kind of lock for one machine, shared by every
experiment of the workspace: two sweeps measuring one machine at once measure each other
(seed 000: a Pi given two heavy jobs hung), and they file their run dirs under the same
machine. A second sweep that needs a held machine is refused, naming the holder, rather than
left waiting: seed 004 keeps one instance per workspace by refusing the second, and a refused
`dvc repro` says at once why, where a waiting one would sit behind a sweep of unknown length.

`runs/sweeps/<experiment>/stop` is the stop request (`bench stop EXPERIMENT`): the scheduler
checks it at least every second, lets in-flight points finish and leaves the rest pending.
Because it is a file in the shared workspace it works where it is unclear which computer the
sweep runs on (seed 004's "simple kill mechanism").
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
from pathlib import Path
from typing import Any

from benchlab.errors import StoreError
from benchlab.ids import check_id, utc_iso
from benchlab.layout import LOCK, STOP_REQUEST, Store, atomic_write_json

DEVICES_DIR = "devices"
"""`runs/devices/`: the device locks (layout.py owns the store's other names)."""


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def holder_is_alive(holder: dict[str, Any]) -> bool:
    """Is the process named in a lock still running? Unknowable for another host: assume so."""
    if holder.get("host") != socket.gethostname():
        return True
    pid = holder.get("pid")
    return not isinstance(pid, int) or _pid_alive(pid)


class _ExclusiveFile:
    """A lock file created complete and exclusively, holding who holds it (pid, host, ...).

    Subclasses say what the lock guards (`_refusal`); the taking, the stale-lock take-over and
    the release are shared, so the experiment lock and the device locks behave alike.
    """

    def __init__(self, path: Path, label: str, extra: dict[str, Any] | None = None) -> None:
        self.path = path
        self.directory = path.parent
        self.label = label
        self.extra = dict(extra or {})
        self.warnings: list[str] = []
        self._held = False

    def _describe(self, holder: dict[str, Any]) -> str:
        return (
            f"pid {holder.get('pid', '?')} on host {holder.get('host', '?')}, "
            f"since {holder.get('started_at', '?')}"
        )

    def _refusal(self, holder: dict[str, Any]) -> str:
        raise NotImplementedError

    def acquire(self) -> Any:
        self.directory.mkdir(parents=True, exist_ok=True)
        mine = {
            **self.extra,
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started_at": utc_iso(),
        }
        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".lock.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(mine, handle, sort_keys=True)
                handle.flush()
                os.fsync(handle.fileno())
            for _ in range(2):
                try:
                    os.link(tmp, self.path)
                except FileExistsError:
                    holder = _read(self.path)
                    if holder is None:
                        continue  # released between our attempt and our read: try again
                    if holder and not holder_is_alive(holder):
                        self._take_over(holder)
                        continue
                    raise StoreError(self._refusal(holder)) from None
                self._held = True
                return self
            raise StoreError(f"{self.path}: could not take the lock for {self.label}")
        finally:
            Path(tmp).unlink(missing_ok=True)

    def _take_over(self, holder: dict[str, Any]) -> None:
        """Move a dead holder's lock aside; if it turned out to be someone else's, give up."""
        aside = self.path.with_name(f".{self.path.name}.stale.{os.getpid()}")
        try:
            os.rename(self.path, aside)
        except FileNotFoundError:
            return
        if _read(aside) != holder:
            os.rename(aside, self.path)  # a live process took it meanwhile: put it back
            raise StoreError(self._refusal(_read(self.path) or {}))
        aside.unlink(missing_ok=True)
        self.warnings.append(
            f"took over a stale lock of {self.label} ({self._describe(holder)}, no longer running)"
        )

    def release(self) -> None:
        if self._held:
            self.path.unlink(missing_ok=True)
            self._held = False


class SweepLock(_ExclusiveFile):
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


class DeviceLock(_ExclusiveFile):
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
    holder = _read(directory / LOCK)
    if not holder or not holder_is_alive(holder):
        raise StoreError(
            f"{directory / LOCK}: experiment {experiment!r} is not running; nothing to stop"
        )
    request = {"host": socket.gethostname(), "pid": os.getpid(), "requested_at": utc_iso()}
    atomic_write_json(directory / STOP_REQUEST, request)
    return holder
