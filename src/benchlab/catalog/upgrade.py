"""`bench catalog upgrade`: an old single-file catalog rewritten as the sharded v3, once.

Why one command and no reader that upgrades: every reader (the query loader, the columnar
cache, the build, validate, the merge driver) reads one format, and a v1 or v2 catalog.json
is refused in one line that names this command (`refuse_old`), as `asv update` does for an
old results dir. The upgrade keeps every run: a v1 entry keeps every field it had and gains
the derived ones (`series`, `precision_family`), and a v2 catalog's conflict lines
(`conflicts`) stay conflict lines in the shards (`order.settle`, see ARCHITECTURE.md, The
catalog, invariant 13). Retracted and rejected ids move to the v3 head.

Format history:
- v1: entries with machine, model, precision, backend, mode, status, tags and metrics.
- v2: the full measurement identity per entry, `series`, `tests`, attempts, warnings,
  samples, stddevs; `retracted` run ids; one file.
- v3: the same entries, one line each in `catalog/<machine>/<ISO week>.<machine>.jsonl` shards;
  catalog.json keeps only the machines' static fields, `retracted` and the layout (see
  `catalog.shards`).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchlab.catalog.document import parse_entries
from benchlab.catalog.format import (
    CATALOG_V1 as CATALOG_V1,  # re-exported: callers import them here
)
from benchlab.catalog.format import CATALOG_V2 as CATALOG_V2
from benchlab.catalog.format import CATALOG_V3 as CATALOG_V3
from benchlab.catalog.format import KNOWN as KNOWN
from benchlab.catalog.format import OLD as OLD
from benchlab.catalog.format import UPGRADE_COMMAND as UPGRADE_COMMAND
from benchlab.catalog.format import old_format as old_format
from benchlab.catalog.format import refuse_old as refuse_old
from benchlab.catalog.gate import MAX_SHARD_BYTES, read_catalog, read_regular
from benchlab.catalog.lock import catalog_lock
from benchlab.catalog.merge import check_conflicts, head_document, static_of
from benchlab.catalog.order import CONFLICT, REJECTED, merge_copies
from benchlab.catalog.shards import merge_shard_bytes, render_shard, shard_name
from benchlab.catalog.text import render
from benchlab.errors import SchemaError, StoreError
from benchlab.identity import precision_family, series_id
from benchlab.layout import atomic_write_bytes, loads_json, write_error, write_set

LEGACY_CACHE = ".catalog-cache.json"
"""The single-file build's private cache, removed by the upgrade (nothing reads it now)."""


def upgrade_entry(entry: dict[str, Any]) -> dict[str, Any]:
    """A v1 entry with the v2 fields it can have (a v2 entry is returned unchanged)."""
    if "series" in entry or not isinstance(entry, dict):
        return entry
    out = dict(entry)
    precision = out.get("precision")
    if isinstance(precision, str):
        out["precision_family"] = precision_family(precision)
    out["series"] = series_id(out)
    return out


def upgrade(doc: Any) -> Any:
    """A v1 document as v2 (its entries upgraded); anything else is returned untouched."""
    if not isinstance(doc, dict) or doc.get("$schema", CATALOG_V1) != CATALOG_V1:
        return doc
    runs = doc.get("runs", [])
    out = dict(doc)
    out["$schema"] = CATALOG_V2
    out["version"] = "2.0"
    if isinstance(runs, list):
        out["runs"] = [upgrade_entry(e) if isinstance(e, dict) else e for e in runs]
    return out


@dataclass
class UpgradeResult:
    """What `bench catalog upgrade` did, for its one-line summary."""

    was: str
    runs: int = 0
    conflicts: int = 0
    shards: int = 0

    def summary(self) -> str:
        if self.was == "v3":
            return "catalog: already v3, nothing to upgrade"
        return (
            f"catalog: upgraded {self.was} to v3: {self.runs} runs, {self.conflicts} "
            f"conflicts kept, {self.shards} shards written"
        )


def upgrade_store(store: Any) -> UpgradeResult:
    """Rewrite the store's v1 or v2 catalog.json as v3 shards and a v3 head, under the
    catalog lock, as one write set (all files replaced, or none). A v3 catalog is left as
    it is. Shard files already on disk (left by a v3 clone before a checkout) are united
    with the upgraded lines, never overwritten."""
    store.require()
    try:
        with catalog_lock(store), write_set(store.write_aside, store.root):
            result = _upgrade(store)
    except OSError as exc:  # a full disk, a read-only store: one line, nothing half-written
        raise write_error(exc) from None
    with contextlib.suppress(OSError):
        (store.runs_dir / LEGACY_CACHE).unlink()
    return result


def _old_entries(path: Path, doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """An old document's runs and conflict lines by run id, every one checked."""
    doc = upgrade(doc)
    runs = doc.get("runs", [])
    if not isinstance(runs, list):
        raise SchemaError(f"{path}: $.runs: expected an array")
    entries = parse_entries(path, runs)
    for line in check_conflicts(str(path), doc):
        held = entries.get(line["run_id"])
        entries[line["run_id"]] = line if held is None else merge_copies(held, line)
    return entries


def _upgrade(store: Any) -> UpgradeResult:
    path = store.catalog_path
    raw = read_catalog(path)
    if raw is None:
        raise StoreError(f"{path}: no catalog; run `bench catalog build` first")
    doc = loads_json(raw, path)
    if type(doc) is not dict:
        raise SchemaError(f"{path}: $: expected a JSON object")
    if doc.get("$schema") == CATALOG_V3:
        return UpgradeResult("v3")
    was = old_format(doc)
    if was is None:
        raise SchemaError(
            f"{path}: $.$schema: expected one of {', '.join(KNOWN)}, got {doc['$schema']!r}"
        )
    retracted = set(doc.get("retracted", []))
    kept = [e for e in _old_entries(path, doc).values() if e["run_id"] not in retracted]
    by_shard: dict[str, list[dict[str, Any]]] = {}
    for entry in kept:
        by_shard.setdefault(shard_name(entry), []).append(entry)
    for name, entries in sorted(by_shard.items()):
        target = store.root / name
        data = render_shard(entries)
        if target.exists() or target.is_symlink():  # a link or FIFO is refused, not followed
            held, _ = read_regular(target, name, MAX_SHARD_BYTES)
            data = merge_shard_bytes(held, data, where=name)
        atomic_write_bytes(target, data)
    head = head_document(static_of(doc.get("machines", {})), retracted, (), doc.get(REJECTED, []))
    atomic_write_bytes(path, render(head).encode("utf-8"))
    conflicts = sum(1 for e in kept if CONFLICT in e)
    return UpgradeResult(was, len(kept) - conflicts, conflicts, len(by_shard))
