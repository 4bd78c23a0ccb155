"""Lock files created complete and exclusively, naming who holds them.

A lock is written to a temp file and hard-linked into place, which fails if a lock exists,
so no reader ever sees a half-written one. It holds the pid and host of its holder (and
whatever the subclass adds); a lock left by a dead process on this same host is taken over
with a warning, one from another host cannot be checked and is respected. The sweep lock,
the device locks (sweep/lock.py) and the catalog build lock are all this one kind.
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
import time
from pathlib import Path
from typing import Any

from benchlab.errors import StoreError
from benchlab.files import SMALL_CAP, read_optional
from benchlab.ids import utc_iso
from benchlab.layout import place

POLL_S = 0.1


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def read_holder(path: Path) -> dict[str, Any] | None:
    try:
        raw = read_optional(path, cap=SMALL_CAP)
        if raw is None:
            return None
        data = json.loads(raw)
    except (StoreError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def holder_is_alive(holder: dict[str, Any]) -> bool:
    """Is the process named in a lock still running? Unknowable for another host: assume so."""
    if holder.get("host") != socket.gethostname():
        return True
    pid = holder.get("pid")
    return not isinstance(pid, int) or pid_alive(pid)


class ExclusiveFile:
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

    def acquire(self, wait_s: float = 0.0) -> Any:
        """Take the lock; a live holder is waited for up to `wait_s` (polled, bounded),
        then refused with the subclass's one-line reason."""
        deadline = time.monotonic() + wait_s
        while True:
            try:
                return self._acquire_once()
            except StoreError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(POLL_S)

    def _acquire_once(self) -> Any:
        # No link on the way in a store (ARCHITECTURE.md, One reader and one writer path).
        place(self.path)
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
                    holder = read_holder(self.path)
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
        if read_holder(aside) != holder:
            os.rename(aside, self.path)  # a live process took it meanwhile: put it back
            raise StoreError(self._refusal(read_holder(self.path) or {}))
        aside.unlink(missing_ok=True)
        self.warnings.append(
            f"took over a stale lock of {self.label} ({self._describe(holder)}, no longer running)"
        )

    def release(self) -> None:
        if self._held:
            self.path.unlink(missing_ok=True)
            self._held = False
