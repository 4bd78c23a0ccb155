"""`bench catalog build`: scan run dirs, union-merge them into catalog.json, write the
inventory, public specs and views.

Builds write the sharded v3 catalog (build_v3: its own marshal cache, one stat per run dir,
worker processes for full builds). The single-file v2 build below stays for
`BENCHLAB_CATALOG_FORMAT=v2`: its private cache (`runs/.catalog-cache.json`, gitignored with
the rest of `runs/`) maps each run dir to its run id and file identities. A dir whose files
are unchanged and whose run id is already in the catalog is not read again, so adding 1,000
runs to 100,000 reads 1,000 dirs. `--full` ignores the cache.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Callable, Container, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchlab.catalog.document import load_document, load_inventory
from benchlab.catalog.extract import RUN_FILES, check_public_entry, extract_entry
from benchlab.catalog.merge import (
    INVENTORY_SCHEMA,
    _static_of,
    check_conflicts,
    finalize,
    merge_catalogs,
    winner,
)
from benchlab.catalog.order import CONFLICT, copies, measurement, settle
from benchlab.catalog.text import _decode, _digest, render, render_catalog, reusable_items
from benchlab.catalog.upgrade import CATALOG_SCHEMA
from benchlab.catalog.views import rebuild_views, refresh_views
from benchlab.errors import BenchlabError, SchemaError
from benchlab.ids import check_id
from benchlab.layout import (
    RECORD,
    REQUIRED_RUN_FILES,
    Store,
    atomic_write_bytes,
    atomic_write_text,
    parse_model,
    read_json,
    write_error,
    write_set,
)
from benchlab.locks import ExclusiveFile
from benchlab.redact import ScanMemo, default_policy, scrub_public
from benchlab.redact.policy import collect_store_names

log = logging.getLogger("benchlab.catalog")

CACHE_NAME = ".catalog-cache.json"
CACHE_VERSION = 2
LOCK_NAME = ".catalog.lock"
LOCK_WAIT_S = 120.0

Progress = Callable[[int], None]


# --- specs --------------------------------------------------------------------------------


def _machine_specs(store: Store) -> dict[str, Any]:
    """Machine specs by id: this clone's private copy, else the public one from git."""
    from benchlab.models import MachineSpecs

    found: dict[str, Path] = {}
    for base in (store.machines_dir, store.by_machine):
        if not base.is_dir():
            continue
        for child in sorted(os.scandir(base), key=lambda d: d.name):
            path = Path(child.path) / "specs.json"
            if child.is_symlink():  # may point anywhere: the build sets it aside
                continue
            if child.is_dir() and not child.name.startswith(".") and path.is_file():
                found[child.name] = path
    specs = {}
    for machine, path in sorted(found.items()):
        parsed = parse_model(path, MachineSpecs, read_json(path))
        if parsed.machine_id != machine:
            raise SchemaError(
                f"{path}: $.machine_id: {parsed.machine_id!r} differs from its dir {machine!r}"
            )
        specs[machine] = parsed
    return specs


def _gpu_label(specs: Any) -> str | None:
    gpus = [g.model for g in specs.hardware.gpu]
    if not gpus:
        return None
    if len(set(gpus)) == 1:
        return gpus[0] if len(gpus) == 1 else f"{len(gpus)}x {gpus[0]}"
    return " + ".join(gpus)


def summary_from_specs(specs: Any) -> dict[str, Any]:
    cpu = specs.hardware.cpu
    out = {
        "os": specs.os.name,
        "arch": cpu.architecture,
        "cpu_cores": cpu.cores_logical or cpu.cores_physical,
        "gpu": _gpu_label(specs),
    }
    return {k: v for k, v in out.items() if v is not None}


def host_named_machines(
    store: Store, specs: dict[str, Any], others: Iterable[str] = ()
) -> set[str]:
    """Machine ids that are, or hold as a part, a host name this store knows: refused from
    every public machine file (specs, inventory) as their runs are refused from the catalog.

    The names: the private specs' and sweep configs' host names, redaction.yaml's known hosts,
    and each machine's own `hostname`. `others`: more ids to judge (an old inventory's, the
    public specs dirs left from an earlier build). redaction.yaml's `allow.values` says a
    name is public after all."""
    from benchlab.redact.policy import read_config
    from benchlab.redact.shapes import refuse_hostname_as_id

    config = read_config(store.redaction_path)
    hosts = {*collect_store_names(store.root).hosts, *config.known.hosts}
    allowed = {v.lower() for v in config.allow.values}
    refused: set[str] = set()
    for machine in {*specs, *others}:
        parsed = specs.get(machine)
        own = getattr(parsed, "hostname", None)
        try:
            refuse_hostname_as_id(
                machine, [*hosts, *([own] if own else [])], machine.lower() in allowed
            )
        except BenchlabError:
            refused.add(machine)
    return refused


def public_static(store: Store, specs: dict[str, Any], static: dict[str, Any]) -> dict[str, Any]:
    """The catalog head's machine descriptions, less those whose id is a host name."""
    refused = host_named_machines(store, specs, static)
    return {m: summary for m, summary in static.items() if m not in refused}


def inventory_from_specs(specs: Any, refused: Container[str] = ()) -> dict[str, Any] | None:
    """A machine's public inventory row; None for a machine whose id is a host name."""
    if specs.machine_id in refused:
        return None
    cpu = specs.hardware.cpu
    out = {
        "id": specs.machine_id,
        "os": specs.os.name,
        "arch": cpu.architecture,
        "cpu_model": cpu.model,
        "cpu_cores": cpu.cores_logical or cpu.cores_physical,
        "gpu": _gpu_label(specs),
        "ram_gb": specs.hardware.ram_gb,
        "tags": sorted(set(specs.tags)),
        "registered_at": specs.registered_at,
        "cost_per_hour": specs.cost_per_hour,
    }
    return scrub_public({k: v for k, v in out.items() if v is not None})


def build_inventory(
    old: dict[str, Any],
    specs: dict[str, Any],
    entries: dict[str, dict],
    store: Store | None = None,
) -> dict[str, Any]:
    """Inventory from specs; machines known before but without specs here are kept, except
    those whose id is a host name (`host_named_machines`), which go, old rows included.
    `store`: whose host names count (default: the store found from here)."""
    from benchlab.layout import find_store

    machines = dict(old.get("machines", {}))
    refused = host_named_machines(store or Store(find_store()), specs, machines)
    for machine in refused:
        machines.pop(machine, None)
    for machine, parsed in specs.items():
        row = inventory_from_specs(parsed, refused)
        if row is not None:
            machines[machine] = row
    by_machine: dict[str, list[dict]] = {}
    ok_by_point: dict[tuple[Any, str], set[str]] = {}
    for entry in entries.values():
        by_machine.setdefault(entry["machine_id"], []).append(entry)
        if entry.get("status", "ok") == "ok":
            point = (entry.get("model_id"), entry["precision"])
            ok_by_point.setdefault(point, set()).add(entry["machine_id"])
    out = {}
    for machine in sorted(machines):
        item = dict(machines[machine])
        mine = by_machine.get(machine, [])
        points = {(e.get("model_id"), e["precision"]) for e in mine if e.get("status") == "ok"}
        item["checklist"] = {
            "specs_complete": all(item.get(k) for k in ("cpu_model", "ram_gb", "os")),
            "in_catalog": bool(mine),
            "ok_run": bool(points),
            "compared": any(len(ok_by_point[p]) > 1 for p in points),
        }
        out[machine] = item
    return {"$schema": INVENTORY_SCHEMA, "machines": out}


# --- scanning -----------------------------------------------------------------------------


def iter_run_dirs(store: Store) -> Iterator[tuple[str, os.DirEntry]]:
    """(path relative to the store, dir entry) of every candidate run dir, in sorted order."""
    for base in (store.by_machine, store.public_runs):
        if not base.is_dir():
            continue
        for machine in sorted(os.scandir(base), key=lambda d: d.name):
            if machine.name.startswith(".") or not machine.is_dir():
                continue
            prefix = f"{store.runs_dir.name}/{base.name}/{machine.name}/"
            for run in sorted(os.scandir(machine.path), key=lambda d: d.name):
                if not run.name.startswith(".") and run.is_dir():
                    yield prefix + run.name, run


def _load_cache(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("version") != CACHE_VERSION:
        return {}
    if not isinstance(data.get("dirs"), dict):
        return {}
    return data


def _signature(run: os.DirEntry) -> tuple[set[str], list[int]]:
    """(run files present, their identity): size, mtime_ns and inode of each, in order.

    A run file corrected in place (no rename, so the dir's mtime stays) still changes its
    size or mtime; a file replaced by rename changes its inode.
    """
    names: set[str] = set()
    ident: list[int] = []
    for item in sorted(os.scandir(run.path), key=lambda d: d.name):
        if item.name in RUN_FILES:
            stat = item.stat(follow_symlinks=False)
            names.add(item.name)
            ident += [RUN_FILES.index(item.name), stat.st_size, stat.st_mtime_ns, stat.st_ino]
    return names, ident


@dataclass
class BuildResult:
    """What a build did, for the one-line summary and `--format json`."""

    new: int = 0
    changed: int = 0
    kept: int = 0
    total: int = 0
    dirs_read: int = 0
    dirs_unchanged: int = 0
    skipped: int = 0
    views_written: int = 0
    views_removed: int = 0
    catalog_written: bool = False
    concurrent_merged: int = 0
    specs_published: int = 0
    warnings: list[str] = field(default_factory=list)

    def summary(self) -> str:
        text = (
            f"catalog: {self.new} new, {self.changed} changed, {self.kept} kept, "
            f"{self.total} runs ({self.dirs_read} run dirs read, {self.dirs_unchanged} unchanged)"
        )
        if self.skipped:
            text += f"; {self.skipped} bad run dir(s) skipped, see the warnings"
        from benchlab.redact.shapes import withheld_summary

        return text + withheld_summary(self.warnings)


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


def scan(
    store: Store,
    cached_dirs: dict[str, list[Any]],
    known: Container[str],
    result: BuildResult,
    progress: Progress | None = None,
) -> tuple[dict[str, dict], dict[str, list[Any]]]:
    """Read the run dirs that changed since the cache was written (every dir without one).

    A dir whose files are unchanged and whose run id is `known` (still in the catalog) is
    not read. Returns (fresh entries by run id, the new dir cache). (The v2 build's scan;
    the v3 build has its own, see build_v3.)
    """
    hosts = collect_store_names(store.root).hosts
    policy = default_policy()
    memo = ScanMemo(policy)
    passed: set[tuple[str, str]] = set()
    new_cache: dict[str, list[Any]] = {}
    scanned: dict[str, dict] = {}
    for seen, (rel, run) in enumerate(iter_run_dirs(store), start=1):
        if progress is not None and seen % 1000 == 0:
            progress(seen)
        if run.is_symlink():  # may point outside the store: set aside, as v3 does
            result.skipped += 1
            result.warnings.append(
                f"skipped: {run.path}: a symlink; run dirs must be real dirs inside the store"
            )
            continue
        names, ident = _signature(run)
        cached = cached_dirs.get(rel)
        if cached is not None and cached[1:] == ident and cached[0] in known:
            new_cache[rel] = cached
            result.dirs_unchanged += 1
            continue
        if not names:
            continue
        run_dir = Path(run.path)
        if RECORD not in names and any(name not in names for name in REQUIRED_RUN_FILES):
            result.warnings.append(f"{run_dir}: incomplete run dir skipped")
            continue
        try:
            entry = extract_entry(store.root, run_dir, names, policy, memo)
            result.warnings.extend(check_public_entry(entry, hosts, policy, passed))
        except BenchlabError as exc:
            result.skipped += 1
            result.warnings.append(f"skipped: {exc}")
            continue
        result.dirs_read += 1
        held = scanned.get(entry["run_id"])
        scanned[entry["run_id"]] = entry if held is None else winner(held, entry)
        new_cache[rel] = [entry["run_id"], *ident]

    return scanned, new_cache


def build(
    store: Store,
    *,
    full: bool = False,
    progress: Progress | None = None,
    jobs: int | None = None,
) -> BuildResult:
    """Scan run dirs, union-merge them into catalog.json, write inventory and views.

    Every entry is read and checked before anything is written; a run dir that cannot be
    read or fails the public checks is named in a warning and skipped, so one bad run never
    wedges the tracked catalog. A run dir present on this clone is the truth about its run:
    its fresh entry replaces the catalog's copy (a run corrected in place is picked up).
    Builds take the store's catalog lock; and just before catalog.json is replaced it is
    read again, and anything that arrived meanwhile (a `git pull` during `dvc repro`) is
    merged in rather than overwritten.

    `full` re-reads every run dir (the only way to see a manifest, kernel or batch file
    corrected in place, with its dir left alone; a record.json is seen: see build_v3).
    `jobs`: worker processes that read run dirs when there are many (a full build); default
    `build_v3.default_jobs`.
    """
    store.require()
    try:
        with catalog_lock(store):
            return _build(store, full=full, progress=progress, jobs=jobs)
    except OSError as exc:  # a full disk, a read-only store: one line, nothing half-written
        raise write_error(exc) from None


FORMAT_ENV = "BENCHLAB_CATALOG_FORMAT"
"""`v2` makes a build write the single-file catalog (for comparisons and old readers); the
default is the sharded v3 catalog (catalog.shards), and a v1 or v2 catalog.json is migrated
to it by the next build."""


def catalog_format(path: Path) -> str:
    """What a build writes: v3, unless $BENCHLAB_CATALOG_FORMAT asks for `v2` and
    catalog.json is not already v3 (going back would rewrite every shard into one file)."""
    if os.environ.get(FORMAT_ENV, "").strip().lower() != "v2":
        return "v3"
    return stored_format(path)


def stored_format(path: Path) -> str:
    """`v3` where catalog.json is a v3 head, else `v2` (v1, v2 or no file yet)."""
    from benchlab.catalog.upgrade import CATALOG_V3

    try:
        with path.open("rb") as handle:
            start = handle.read(256)
    except OSError:
        return "v2"
    return "v3" if f'"$schema": "{CATALOG_V3}"'.encode() in start else "v2"


def _build(
    store: Store, *, full: bool, progress: Progress | None, jobs: int | None = None
) -> BuildResult:
    if catalog_format(store.catalog_path) == "v3":
        from benchlab.catalog.build_v3 import build_v3

        return build_v3(store, full=full, progress=progress, jobs=jobs)
    # catalog.json, inventory and public specs: all replaced, or none
    with write_set(store.write_aside):
        return _build_v2(store, full=full, progress=progress)


def _build_v2(store: Store, *, full: bool, progress: Progress | None) -> BuildResult:
    result = BuildResult()
    cache_path = store.runs_dir / CACHE_NAME
    cache = {} if full else _load_cache(cache_path)
    cached_dirs: dict[str, list[Any]] = cache.get("dirs", {})
    raw = store.catalog_path.read_bytes() if store.catalog_path.exists() else None
    trusted = raw is not None and cache.get("catalog") == _digest(raw)
    text = _decode(store.catalog_path, raw) if raw is not None else None
    old_doc, old_entries = load_document(store.catalog_path, text, trusted=trusted)
    retracted = set(old_doc.get("retracted", []))
    old_inventory = load_inventory(store.inventory_path)
    specs = _machine_specs(store)

    scanned, new_cache = scan(store, cached_dirs, old_entries, result, progress)

    merged = dict(old_entries)
    for line in check_conflicts(str(store.catalog_path), old_doc):  # kept by a merge
        merged[line["run_id"]] = line
    touched: set[str] = set()
    for run_id, entry in scanned.items():
        if run_id in retracted:
            continue
        held = old_entries.get(run_id)
        if CONFLICT in merged.get(run_id, {}):  # this clone's copy replaces its own only
            held = merged[run_id]
            key = measurement(entry)
            entry = settle([entry, *(c for c in copies(held) if measurement(c) != key)])
        if held != entry:
            merged[run_id] = entry
            touched.add(run_id)
            if held is None:
                result.new += 1
            else:
                result.changed += 1

    static = _static_of(old_doc.get("machines", {}))
    for machine, parsed in specs.items():
        static[machine] = summary_from_specs(parsed)
    doc = finalize(merged, public_static(store, specs, static), retracted)
    reuse = {}
    if trusted and text is not None and old_doc.get("$schema") == CATALOG_SCHEMA:
        reuse = reusable_items(text, old_doc.get("runs", []))
        for run_id in touched:
            reuse.pop(run_id, None)
    data = render_catalog(doc, reuse).encode("utf-8")
    now = store.catalog_path.read_bytes() if store.catalog_path.exists() else None
    if now != raw:
        # Someone replaced catalog.json while we scanned: keep what they brought.
        theirs_doc, theirs = load_document(store.catalog_path, now)
        result.concurrent_merged = len(set(theirs) - set(merged))
        doc = merge_catalogs(doc, theirs_doc)
        merged = {entry["run_id"]: entry for entry in doc["runs"]}
        data = render_catalog(doc).encode("utf-8")
        raw = now
    result.total = len(doc["runs"])
    result.kept = result.total - result.new - result.changed
    if data != raw:
        atomic_write_bytes(store.catalog_path, data)
        result.catalog_written = True
    runs = {k: v for k, v in merged.items() if CONFLICT not in v}  # no view of a conflict
    touched &= runs.keys()
    inventory = render(build_inventory(old_inventory, specs, runs, store)).encode("utf-8")
    if not store.inventory_path.exists() or store.inventory_path.read_bytes() != inventory:
        atomic_write_bytes(store.inventory_path, inventory)
    result.specs_published = publish_specs(store, specs)

    if trusted and not full and store.by_model.is_dir() and store.by_date.is_dir():
        written, removed = refresh_views(store, {k: runs[k] for k in touched}, old_entries)
    else:
        written, removed = rebuild_views(store, runs, touched, rewrite_all=full)
    result.views_written, result.views_removed = written, removed
    cache_doc = {"version": CACHE_VERSION, "catalog": _digest(data), "dirs": new_cache}
    atomic_write_text(cache_path, json.dumps(cache_doc, sort_keys=True, separators=(",", ":")))
    if result.catalog_written:
        _warm_query_cache(store, doc)
    return result


def retract(store: Store, run_ids: list[str]) -> int:
    """Withdraw runs from the public record: their entries go, their ids join `retracted`,
    and no later build or merge brings them back. Returns how many entries were removed."""
    store.require()
    for run_id in run_ids:
        check_id(run_id, "run id")
    try:
        return _retract(store, run_ids)
    except OSError as exc:
        raise write_error(exc) from None


def _retract(store: Store, run_ids: list[str]) -> int:
    with catalog_lock(store):
        if stored_format(store.catalog_path) == "v3":
            from benchlab.catalog.build_v3 import retract_v3

            return retract_v3(store, run_ids)
        raw = store.catalog_path.read_bytes() if store.catalog_path.exists() else None
        doc, entries = load_document(store.catalog_path, raw)
        for run_id in run_ids:
            check_id(run_id, "run id")
        gone = [run_id for run_id in run_ids if run_id in entries]
        static = _static_of(doc.get("machines", {}))
        withdrawn = set(doc.get("retracted", [])) | set(run_ids)
        new = finalize(entries, static, withdrawn)
        atomic_write_bytes(store.catalog_path, render_catalog(new).encode("utf-8"))
        inventory = load_inventory(store.inventory_path)
        kept = {e["run_id"]: e for e in new["runs"]}
        text = render(build_inventory(inventory, {}, kept, store)).encode("utf-8")
        atomic_write_bytes(store.inventory_path, text)
    return len(gone)


def publish_specs(store: Store, specs: dict[str, Any]) -> int:
    """Redacted public copies (machines/<id>/specs.json) of the specs this clone holds.

    The hostname goes, and every value passes the redaction policy; a copy is rewritten only
    when its text changes, so builds stay quiet in git. A machine whose id is a host name
    gets no copy, and one left by an earlier build (before the name was known) is removed.
    """
    from benchlab.layout import dump_model
    from benchlab.models import MachineSpecs

    written = 0
    on_disk = (
        [d.name for d in store.machines_dir.iterdir() if d.is_dir() and not d.name.startswith(".")]
        if store.machines_dir.is_dir()
        else []
    )
    refused = host_named_machines(store, specs, on_disk)
    for machine in sorted(refused):
        _remove_public_specs(store, machine)
    for machine, parsed in sorted(specs.items()):
        if machine in refused:
            continue
        public = scrub_public(dump_model(parsed))
        public.pop("hostname", None)
        text = render(dump_model(MachineSpecs.model_validate(public)))
        target = store.public_specs(machine)
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            atomic_write_text(target, text)
            written += 1
    return written


def _remove_public_specs(store: Store, machine: str) -> None:
    """Delete machines/<id>/specs.json (and its dir, once empty); never follows a link."""
    try:
        target = store.public_specs(machine)
    except BenchlabError:
        return  # not an id: nothing this build would have written there
    if target.parent.is_symlink():
        target.parent.unlink()  # the link goes, never what it points at
        return
    with contextlib.suppress(FileNotFoundError):
        target.unlink()
        log.warning("%s: removed (the machine id is a host name)", target)
    with contextlib.suppress(OSError):
        target.parent.rmdir()


WARM_LIMIT_BYTES = 16 * 1024 * 1024
"""Below this much shard text (about 25,000 runs) a v3 build reads its catalog back to warm
the query cache: about half a second; past it the first query pays."""


def _warm_query_cache(
    store: Store, doc: dict[str, Any] | None = None, shards: list[str] | None = None
) -> None:
    """Hand the new catalog to the query cache, so the first question after a build is fast.

    The one place every build that wrote the catalog calls. v2 passes the document it wrote
    (`doc`). A v3 build holds no whole document; it passes the shards it rewrote or removed
    (`shards`, names relative to the store; catalog.json may have changed too), which is
    what an incremental refresh of the columnar query cache needs: that refresh belongs
    here. Until then a catalog under WARM_LIMIT_BYTES of shards is read back into the
    (marshal) query cache, about what the first query would pay; larger ones are left to
    the first query.
    """
    from benchlab.catalog.read import load_catalog, prime_cache

    try:
        if doc is not None:
            prime_cache(store.catalog_path, store.query_cache, doc)
            return
        from benchlab.catalog.shards import shard_stats

        if sum(size for _, size, _, _ in shard_stats(store.catalog_path)) <= WARM_LIMIT_BYTES:
            load_catalog(store.catalog_path, store.query_cache)
    except (BenchlabError, OSError) as exc:  # an optimisation: never fail the build for it
        log.warning("query cache not warmed: %s", exc)
