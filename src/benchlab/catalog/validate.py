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
