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
import logging
import os
from collections.abc import Callable, Container, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchlab.catalog.merge import (
    INVENTORY_SCHEMA,
)
from benchlab.catalog.text import render
from benchlab.errors import BenchlabError, SchemaError
from benchlab.ids import check_id
from benchlab.layout import (
    Store,
    atomic_write_text,
    parse_model,
    read_json,
    write_error,
)
from benchlab.locks import ExclusiveFile
from benchlab.redact import scrub_public
from benchlab.redact.policy import collect_store_names

log = logging.getLogger("benchlab.catalog")

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


def _build(
    store: Store, *, full: bool, progress: Progress | None, jobs: int | None = None
) -> BuildResult:
    from benchlab.catalog.build_v3 import build_v3

    return build_v3(store, full=full, progress=progress, jobs=jobs)


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
    from benchlab.catalog.build_v3 import retract_v3

    with catalog_lock(store):
        return retract_v3(store, run_ids)


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
    from benchlab.catalog.read import load_catalog

    try:
        from benchlab.catalog.shards import shard_stats

        if sum(size for _, size, _, _ in shard_stats(store.catalog_path)) <= WARM_LIMIT_BYTES:
            load_catalog(store.catalog_path, store.query_cache)
    except (BenchlabError, OSError) as exc:  # an optimisation: never fail the build for it
        log.warning("query cache not warmed: %s", exc)
