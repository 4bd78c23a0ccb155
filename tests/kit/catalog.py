"""Catalogs for tests: one writer of a v3 catalog, and a built catalog as one document."""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

from benchlab.catalog.read import load_catalog
from benchlab.catalog.shards import shard_dir
from benchlab.catalog.upgrade import CATALOG_V2, upgrade_store
from benchlab.layout import Store, atomic_write_bytes, dump_model


def write_v3_catalog(
    root: Path,
    runs: Iterable[Mapping[str, Any] | Any],
    machines: Mapping[str, Mapping[str, Any] | Any] | None = None,
    retracted: Iterable[str] = (),
) -> Path:
    """A sharded v3 catalog in the store at `root` holding exactly `runs` (entry dicts or
    `CatalogEntry` models) and the static fields of `machines`; returns catalog.json's path.

    Written the way a real store gets one from an old file: the single-file document, then
    `bench catalog upgrade` (`upgrade_store`), so the head and every shard line are exactly
    what the real shard writer makes, and fixtures never hold a second encoder to drift.
    """
    entries = [_as_dict(run) for run in runs]
    doc = {
        "$schema": CATALOG_V2,
        "version": "2.0",
        "machines": {m: _as_dict(summary) for m, summary in (machines or {}).items()},
        "retracted": sorted(retracted),
        "runs": sorted(entries, key=lambda e: e["run_id"]),
    }
    store = Store(Path(root))
    shutil.rmtree(shard_dir(store.catalog_path), ignore_errors=True)  # exactly `runs`
    atomic_write_bytes(store.catalog_path, orjson.dumps(doc))
    upgrade_store(store)
    return store.catalog_path


def _as_dict(run: Mapping[str, Any] | Any) -> dict[str, Any]:
    """An entry (or machine summary) as stored: a model dumped without its unset fields."""
    if isinstance(run, Mapping):
        return dict(run)
    return dump_model(run)


def catalog_doc(path: Path) -> dict[str, Any]:
    """catalog.json's head with `runs` (every entry), `machines` and `last_updated` as the
    one reader gives them.

    A v3 catalog keeps its entries in shards next to the head; `load_catalog` reads them
    (and checks every one), so a test sees what `bench` sees, in run id order.
    """
    head = orjson.loads(Path(path).read_bytes())
    loaded = load_catalog(Path(path))
    runs = sorted(loaded.runs, key=lambda e: e["run_id"])
    return {**head, "machines": loaded.machines, "last_updated": loaded.last_updated, "runs": runs}
