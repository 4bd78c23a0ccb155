"""`bench catalog build` for the sharded v3 catalog (see `catalog.shards`).

Why a build rewrites only the shards it touches: at a million runs the entries are about a
gigabyte of text. A build reads the run dirs that changed (as the v2 build does), reads the
shards their entries belong to, and rewrites those; every other shard is known from the
private build cache (`runs/.catalog-cache.json`: each shard's size, mtime, inode, run ids
and ok (model, precision) points), so neither the entries nor the derived inventory need
the rest of the catalog. A shard whose file changed behind the cache's back (a `git pull`)
is read and validated again.

A v1 or v2 catalog.json (or a v3 one holding entries inline after a git merge with a v2
clone) is migrated: its entries are placed into shards and catalog.json is rewritten as the
v3 head. Nothing is dropped.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import orjson

from benchlab.catalog.build import (
    CACHE_NAME,
    BuildResult,
    Progress,
    _load_cache,
    _machine_specs,
    build_inventory,
    publish_specs,
    scan,
    summary_from_specs,
)
from benchlab.catalog.document import load_inventory, parse_catalog, parse_shard_entries
from benchlab.catalog.merge import _static_of, head_document
from benchlab.catalog.order import winner
from benchlab.catalog.shards import iter_shards, read_shard, render_shard, shard_name
from benchlab.catalog.text import _digest, render
from benchlab.catalog.views import rebuild_views, refresh_views
from benchlab.errors import SchemaError
from benchlab.layout import Store, atomic_write_bytes, loads_json

CACHE_VERSION = 3


def _points(entries: dict[str, dict]) -> list[list[Any]]:
    """What the inventory's checklist needs of a shard: its distinct (model, precision,
    status) triples."""
    found = {
        (e.get("model_id"), e.get("precision"), e.get("status", "ok")) for e in entries.values()
    }
    return sorted(([m, p, s] for m, p, s in found), key=lambda t: [str(x) for x in t])


def _stat(path: Path) -> list[int]:
    stat = path.stat()
    return [stat.st_size, stat.st_mtime_ns, stat.st_ino]


def build_v3(store: Store, *, full: bool, progress: Progress | None) -> BuildResult:
    """The v3 build (the caller holds the catalog lock)."""
    result = BuildResult()
    path = store.catalog_path
    cache_path = store.runs_dir / CACHE_NAME
    cache = {} if full else _load_cache(cache_path)
    if cache.get("format") != CACHE_VERSION:
        cache = {}
    raw = path.read_bytes() if path.exists() else None
    head: dict[str, Any] = {}
    if raw is not None:
        head = loads_json(raw, path)
        if not isinstance(head, dict):
            raise SchemaError(f"{path}: $: expected a JSON object")
    pending = parse_catalog(path, head) if raw is not None else {}
    retracted = set(head.get("retracted", []))
    old_inventory = load_inventory(store.inventory_path)
    specs = _machine_specs(store)

    cached_shards: dict[str, list[Any]] = cache.get("shards", {})
    info: dict[str, list[Any]] = {}
    loaded: dict[str, dict[str, dict]] = {}
    trusted = raw is not None and cache.get("catalog") == _digest(raw)
    for name, shard_path in iter_shards(path):
        sig = _stat(shard_path)
        held = cached_shards.get(name)
        if held is not None and held[:3] == sig:
            info[name] = held
            continue
        trusted = False
        entries = parse_shard_entries(name, read_shard(shard_path, name))
        loaded[name] = entries
        info[name] = [*sig, sorted(entries), _points(entries)]
    if set(cached_shards) != set(info):
        trusted = False
    where = {run_id: name for name, item in info.items() for run_id in item[3]}
    known = where.keys() | pending.keys()

    scanned, new_cache = scan(store, cache.get("dirs", {}), known, result, progress)

    def shard(name: str) -> dict[str, dict]:
        if name not in loaded:
            target = store.root / name
            loaded[name] = (
                {e["run_id"]: e for e in read_shard(target, name)} if target.exists() else {}
            )
        return loaded[name]

    touched_names: set[str] = set()
    touched: dict[str, dict] = {}
    before: dict[str, dict] = {}

    def place(entry: dict, fresh: bool) -> None:
        run_id = entry["run_id"]
        target = shard_name(entry)
        old = where.get(run_id)
        held = shard(old).get(run_id) if old is not None else None
        new = entry if fresh or held is None else winner(held, entry)
        if held == new and old == target:
            return
        if old is not None:
            shard(old).pop(run_id, None)
            touched_names.add(old)
        shard(target)[run_id] = new
        where[run_id] = target
        touched_names.add(target)
        touched[run_id] = new
        if held is not None:
            before[run_id] = held
        if fresh:
            if held is None:
                result.new += 1
            else:
                result.changed += 1

    for run_id in sorted(pending):
        if run_id not in retracted:
            place(pending[run_id], fresh=False)
    for run_id in sorted(scanned):
        if run_id not in retracted:
            place(scanned[run_id], fresh=True)
    for run_id in sorted(retracted):
        old = where.pop(run_id, None)
        if old is not None:
            shard(old).pop(run_id, None)
            touched_names.add(old)

    for name in sorted(touched_names):
        entries = loaded[name]
        target = store.root / name
        if not entries:
            if target.exists():
                target.unlink()
                result.catalog_written = True
                with contextlib.suppress(OSError):
                    target.parent.rmdir()
            info.pop(name, None)
            continue
        data = render_shard(entries.values())
        if not target.exists() or target.read_bytes() != data:
            atomic_write_bytes(target, data)
            result.catalog_written = True
        info[name] = [*_stat(target), sorted(entries), _points(entries)]

    static = _static_of(head.get("machines", {}))
    for machine, parsed in specs.items():
        static[machine] = summary_from_specs(parsed)
    head_bytes = render(head_document(static, retracted)).encode("utf-8")
    if head_bytes != raw:
        atomic_write_bytes(path, head_bytes)
        result.catalog_written = True

    result.total = len(where)
    result.kept = result.total - result.new - result.changed
    light = {
        f"{name}#{i}": {
            "machine_id": name.split("/")[1],
            "model_id": m,
            "precision": p,
            "status": s,
        }
        for name, item in info.items()
        for i, (m, p, s) in enumerate(item[4])
    }
    inventory = render(build_inventory(old_inventory, specs, light)).encode("utf-8")
    if not store.inventory_path.exists() or store.inventory_path.read_bytes() != inventory:
        atomic_write_bytes(store.inventory_path, inventory)
    result.specs_published = publish_specs(store, specs)

    if trusted and not full and store.by_model.is_dir() and store.by_date.is_dir():
        written, removed = refresh_views(store, touched, before)
    else:
        every = {run_id: shard(name)[run_id] for run_id, name in where.items()}
        written, removed = rebuild_views(store, every, set(touched), rewrite_all=full)
    result.views_written, result.views_removed = written, removed
    cache_doc = {
        "version": 2,
        "format": CACHE_VERSION,
        "catalog": _digest(head_bytes),
        "dirs": new_cache,
        "shards": info,
    }
    atomic_write_bytes(cache_path, orjson.dumps(cache_doc, option=orjson.OPT_SORT_KEYS))
    return result


def retract_v3(store: Store, run_ids: list[str]) -> int:
    """`retract` on a v3 catalog: the ids join `retracted` and leave their shards."""
    path = store.catalog_path
    head = loads_json(path.read_bytes(), path)
    withdrawn = set(head.get("retracted", [])) | set(run_ids)
    wanted = set(run_ids)
    gone = 0
    for name, shard_path in iter_shards(path):
        entries = read_shard(shard_path, name)
        kept = [e for e in entries if e["run_id"] not in wanted]
        if len(kept) != len(entries):
            gone += len(entries) - len(kept)
            if kept:
                atomic_write_bytes(shard_path, render_shard(kept))
            else:
                shard_path.unlink()
    static = _static_of(head.get("machines", {}))
    pending = [e for e in head.get("runs", []) if e["run_id"] not in wanted]
    gone += len(head.get("runs", [])) - len(pending)
    doc = head_document(static, withdrawn, pending)
    atomic_write_bytes(path, render(doc).encode("utf-8"))
    return gone
