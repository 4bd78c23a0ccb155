"""`bench catalog validate`: the tracked catalog checked against its own runs."""

from __future__ import annotations

from dataclasses import dataclass

from benchlab.catalog.document import load_document, load_inventory
from benchlab.catalog.merge import _static_of, finalize
from benchlab.errors import SchemaError, StoreError
from benchlab.layout import (
    Store,
)

# --- validate -----------------------------------------------------------------------------


@dataclass
class ValidationReport:
    runs: int
    absent: list[str]
    warnings: list[str]


def validate(store: Store) -> ValidationReport:
    """Check catalog.json: schema, duplicate ids, index, machines, last_updated.

    Errors raise SchemaError naming the file and JSON path. Run dirs absent on this clone
    are warnings, by design: raw runs are gitignored and other clones built them.
    """
    store.require()
    path = store.catalog_path
    if not path.exists():
        raise StoreError(f"{path}: no catalog; run `bench catalog build` first")
    from benchlab.catalog.build import stored_format

    if stored_format(path) == "v3":
        return _validate_v3(store)
    data, entries = load_document(path)
    expected = finalize(entries, _static_of(data.get("machines", {})), data.get("retracted", []))
    if [e["run_id"] for e in data.get("runs", [])] != sorted(entries):
        raise SchemaError(f"{path}: $.runs: not sorted by run_id; rebuild the catalog")
    index = data.get("index", {})
    for key in ("by_model", "by_precision", "by_date"):
        have, want = index.get(key, {}), expected["index"][key]
        for group in sorted(have.keys() | want.keys()):
            if sorted(have.get(group, [])) != want.get(group, []):
                raise SchemaError(
                    f"{path}: $.index.{key}.{group}: does not match the runs; "
                    "rebuild with `bench catalog build`"
                )
    machines = data.get("machines", {})
    for machine in sorted(machines.keys() | expected["machines"].keys()):
        have, want = machines.get(machine), expected["machines"].get(machine)
        if have is None or want is None:
            raise SchemaError(f"{path}: $.machines.{machine}: does not match the runs")
        if "hostname" in have:
            raise SchemaError(f"{path}: $.machines.{machine}.hostname: must not be published")
        for key in ("id", "runs", "last_run"):
            if have.get(key) != want.get(key):
                raise SchemaError(
                    f"{path}: $.machines.{machine}.{key}: {have.get(key)!r}, "
                    f"but the runs say {want.get(key)!r}"
                )
    if data.get("last_updated") != expected.get("last_updated"):
        raise SchemaError(
            f"{path}: $.last_updated: {data.get('last_updated')!r}, but the newest run is "
            f"{expected.get('last_updated')!r}"
        )
    load_inventory(store.inventory_path)
    absent = [
        e["run_id"]
        for e in entries.values()
        if e.get("path") and not (store.root / e["path"]).is_dir()
    ]
    warnings = [f"{run_id}: run dir absent on this clone" for run_id in sorted(absent)]
    return ValidationReport(runs=len(entries), absent=sorted(absent), warnings=warnings)


def _validate_v3(store: Store) -> ValidationReport:
    """A v3 catalog: catalog.json's shape, and each shard's entries valid, in the shard their
    machine and week name, sorted and canonical (as a build writes them). Derived state is
    not stored, so there is nothing else to disagree with the entries."""
    from benchlab.catalog.document import parse_catalog, parse_shard_entries
    from benchlab.catalog.read import load_catalog
    from benchlab.catalog.shards import iter_shards, read_shard, render_shard, shard_name
    from benchlab.layout import loads_json

    path = store.catalog_path
    parse_catalog(path, loads_json(path.read_bytes(), path))
    for name, shard_path in iter_shards(path):
        entries = read_shard(shard_path, name)
        parse_shard_entries(name, entries)
        for entry in entries:
            if shard_name(entry) != name:
                raise SchemaError(
                    f"{name}: {entry['run_id']}: belongs in {shard_name(entry)}; "
                    "rebuild with `bench catalog build`"
                )
        if render_shard(entries) != shard_path.read_bytes():
            raise SchemaError(f"{name}: not sorted or not canonical; rebuild the catalog")
    load_inventory(store.inventory_path)
    loaded = load_catalog(path)
    absent = sorted(
        e["run_id"] for e in loaded.runs if e.get("path") and not (store.root / e["path"]).is_dir()
    )
    warnings = [f"{run_id}: run dir absent on this clone" for run_id in absent]
    return ValidationReport(runs=len(loaded.runs), absent=absent, warnings=warnings)
