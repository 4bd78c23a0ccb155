"""Loading the tracked catalog and inventory documents for a build or a merge."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchlab.catalog.format import CATALOG_V3, refuse_old
from benchlab.catalog.gate import MAX_CATALOG_BYTES, read_regular
from benchlab.catalog.gate import check_head as gate_head
from benchlab.errors import SchemaError, StoreError
from benchlab.ids import check_id
from benchlab.layout import loads_json, parse_model, read_json
from benchlab.models import Catalog, MachineInventory

# --- loading the tracked files ------------------------------------------------------------


def parse_catalog(path: Path | str, data: Any) -> dict[str, dict[str, Any]]:
    """A v3 head through the gate, then its inline entries (pydantic); return them by run
    id. A v1 or v2 catalog is refused in one line that names `bench catalog upgrade`."""
    if not isinstance(data, dict):
        raise SchemaError(f"{path}: $: expected a JSON object")
    refuse_old(path, data)
    if data.get("$schema") != CATALOG_V3:
        raise SchemaError(
            f"{path}: $.$schema: expected {CATALOG_V3!r}, got {data.get('$schema')!r}; "
            "a newer benchlab wrote it: upgrade benchlab"
        )
    check_head(path, data)
    return parse_entries(path, data.get("runs", []))


def parse_entries(path: Path | str, runs: Any) -> dict[str, dict[str, Any]]:
    """Validate entries as catalog entries (pydantic: for a build, a merge or an upgrade);
    return them by run id. Duplicates are errors."""
    parse_model(path, Catalog, {"$schema": Catalog.SCHEMA_ID, "runs": runs})
    entries: dict[str, dict[str, Any]] = {}
    first_seen: dict[str, int] = {}
    for position, entry in enumerate(runs):
        run_id = entry["run_id"]
        pointer = f"$.runs[{position}]"
        try:
            check_id(run_id, "run id")
            check_id(entry["machine_id"], "machine id")
        except StoreError as exc:
            raise SchemaError(f"{path}: {pointer}: {exc}") from None
        if run_id in entries:
            raise SchemaError(
                f"{path}: {pointer}.run_id: duplicate id {run_id!r} "
                f"(also at $.runs[{first_seen[run_id]}])"
            )
        entries[run_id] = entry
        first_seen[run_id] = position
    return entries


def load_document(
    path: Path, raw: bytes | str | None = None, *, trusted: bool = False
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """(document, entries by run id); an absent catalog is empty.

    `trusted` skips schema validation: only for bytes this store's last build wrote itself
    (the build cache holds their digest), which were validated when they were made.
    """
    if raw is None:
        if not path.exists() and not path.is_symlink():
            return {}, {}
        raw, _ = read_regular(path, str(path), MAX_CATALOG_BYTES)
    data = loads_json(raw, path)
    if not isinstance(data, dict):
        raise SchemaError(f"{path}: $: expected a JSON object")
    if trusted:
        return data, {entry["run_id"]: entry for entry in data.get("runs", [])}
    return data, parse_catalog(path, data)


def load_inventory(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    data: dict[str, Any] = read_json(path)
    parse_model(path, MachineInventory, data)
    return data


def check_head(path: Path | str, data: dict[str, Any]) -> None:
    """A v3 catalog.json through the gate (`gate.check_head`): machines' static fields,
    `retracted` run ids and pending `runs`, each id by its pattern, every string bounded and
    visible; one SchemaError names the file and the field (`$.retracted[0]`)."""
    gate_head(path, data)


def parse_shard_entries(name: str, entries: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Validate one shard's entries as catalog entries (pydantic: for a build or a merge)."""
    return parse_entries(name, entries)
