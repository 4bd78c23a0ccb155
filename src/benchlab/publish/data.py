"""The public data model: everything a chart or a page may read, and nothing else.

Charts and pages read only public files (catalog.json, the machine inventory, public specs)
so the site can be built in CI from what git tracks, never from private run dirs. The catalog
comes through the one reader, `catalog.read.load_catalog`, as plain entry dicts: the charts,
the site, the query verbs and the regression detector all see the same rows, checked and
upgraded (v1 to v2) the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchlab.catalog.read import LoadedCatalog, load_catalog
from benchlab.layout import Store, read_model
from benchlab.models import MachineInventory, MachineSpecs


@dataclass(frozen=True)
class PublicData:
    """The public catalog (entry dicts), the machine inventory and the public specs."""

    catalog: LoadedCatalog
    inventory: MachineInventory = field(default_factory=MachineInventory)
    specs: Mapping[str, MachineSpecs] = field(default_factory=dict)
    store_root: Path | None = None

    @property
    def runs(self) -> list[dict[str, Any]]:
        return self.catalog.runs

    def cost_per_hour(self, machine_id: str) -> float | None:
        """The inventory's price wins over the specs': the inventory is edited by hand."""
        entry = self.inventory.machines.get(machine_id)
        if entry is not None and entry.cost_per_hour is not None:
            return entry.cost_per_hour
        spec = self.specs.get(machine_id)
        return spec.cost_per_hour if spec is not None else None

    def machine_ids(self) -> list[str]:
        ids = set(self.catalog.machines) | set(self.inventory.machines)
        ids.update(run["machine_id"] for run in self.catalog.runs)
        return sorted(ids)


def load_public(store: Store) -> PublicData:
    """Read the public files of a store; a store without catalog.json is a one-line error
    (the reader's StoreError says to run `bench catalog build`)."""
    catalog = load_catalog(store.catalog_path)
    inventory = (
        read_model(store.inventory_path, MachineInventory)
        if store.inventory_path.is_file()
        else MachineInventory()
    )
    specs: dict[str, MachineSpecs] = {}
    machine_ids = set(catalog.machines) | set(inventory.machines)
    machine_ids.update(run["machine_id"] for run in catalog.runs)
    for machine_id in sorted(machine_ids):
        path = store.public_specs(machine_id)
        if path.is_file():
            specs[machine_id] = read_model(path, MachineSpecs)
    return PublicData(catalog=catalog, inventory=inventory, specs=specs, store_root=store.root)
