"""One catalog build, retraction, resolve or upgrade at a time per store."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

from benchlab.layout import (
    Store,
)
from benchlab.runtime.locks import ExclusiveFile

log = logging.getLogger("benchlab.catalog")


LOCK_NAME = ".catalog.lock"


LOCK_WAIT_S = 120.0


class CatalogLock(ExclusiveFile):
    """One catalog build (or retraction) at a time per store."""

    def __init__(self, store: Store) -> None:
        super().__init__(store.runs_dir / LOCK_NAME, "the catalog")

    def _refusal(self, holder: dict[str, Any]) -> str:
        return (
            f"{self.path}: another catalog build holds the lock "
            f"({self._describe(holder) if holder else 'unreadable lock'}); wait for it to "
            "finish, or remove the lock if that build is gone"
        )


@contextlib.contextmanager
def catalog_lock(store: Store, wait_s: float = LOCK_WAIT_S) -> Iterator[None]:
    """Hold the store's catalog lock; a live holder is waited for (bounded), then named."""
    lock = CatalogLock(store)
    lock.acquire(wait_s)
    for line in lock.warnings:
        log.warning("%s", line)
    try:
        yield
    finally:
        lock.release()
