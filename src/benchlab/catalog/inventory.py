"""Machines in the public catalog: specs found in the store, the head's static fields, the
inventory (machines/catalog.json) with its checklist, and the redacted public specs. A
machine whose id is a host name is refused from all of them."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Container, Iterable
from pathlib import Path
from typing import Any

from benchlab.catalog.merge import (
    INVENTORY_SCHEMA,
)
from benchlab.catalog.text import render
from benchlab.errors import BenchlabError, SchemaError
from benchlab.files import read_optional, refuse_links
from benchlab.layout import (
    Store,
    atomic_write_text,
    dump_model,
    find_store,
    parse_model,
    read_json,
)
from benchlab.models import MachineSpecs
from benchlab.redact import scrub_public
from benchlab.redact.policy import collect_store_names, read_config
from benchlab.redact.shapes import refuse_hostname_as_id

log = logging.getLogger("benchlab.catalog")


def machine_specs(store: Store) -> dict[str, Any]:
    """Machine specs by id: this clone's private copy, else the public one from git."""
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
    row: dict[str, Any] = scrub_public({k: v for k, v in out.items() if v is not None})
    return row


def build_inventory(
    old: dict[str, Any],
    specs: dict[str, Any],
    entries: dict[str, dict[str, Any]],
    store: Store | None = None,
) -> dict[str, Any]:
    """Inventory from specs; machines known before but without specs here are kept, except
    those whose id is a host name (`host_named_machines`), which go, old rows included.
    `store`: whose host names count (default: the store found from here)."""
    machines = dict(old.get("machines", {}))
    refused = host_named_machines(store or Store(find_store()), specs, machines)
    for machine in refused:
        machines.pop(machine, None)
    for machine, parsed in specs.items():
        row = inventory_from_specs(parsed, refused)
        if row is not None:
            machines[machine] = row
    by_machine: dict[str, list[dict[str, Any]]] = {}
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


def publish_specs(store: Store, specs: dict[str, Any]) -> int:
    """Redacted public copies (machines/<id>/specs.json) of the specs this clone holds.

    The hostname goes, and every value passes the redaction policy; a copy is rewritten only
    when its text changes, so builds stay quiet in git. A machine whose id is a host name
    gets no copy, and one left by an earlier build (before the name was known) is removed.
    """
    written = 0
    refuse_links(store.machines_dir, store.root)
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
        if read_optional(target, root=store.root) != text.encode("utf-8"):
            atomic_write_text(target, text, root=store.root)
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
