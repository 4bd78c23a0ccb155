"""The public data model: everything a chart or a page may read, and nothing else.

Charts and pages read only public files (catalog.json, the machine inventory, public specs)
so the site can be built in CI from what git tracks, never from private run dirs. The catalog
comes through the one reader, `catalog.read.load_catalog`, as plain entry dicts: the charts,
the site, the query verbs and the regression detector all see the same rows, checked and
upgraded (v1 to v2) the same way.

The site reads a large catalog leaner (`load_site`): every run as a *light* entry (its
series' identity fields, its version, status, tags and metrics, built from the columnar query
cache, `query.colcache`), and in full only the runs a page shows (`PublicData.full`,
`PublicData.upgrade`). Light entries answer every field the site reads of runs it does not
show, with the values the full entry holds, so the pages are the same; at a million runs
this saves most of the 40 s and several GB that loading every entry in full costs.
"""

from __future__ import annotations

import gc
import logging
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchlab.catalog.format import CATALOG_V3, Entry
from benchlab.catalog.order import machine_activity, time_key
from benchlab.catalog.read import (
    METRICS,
    LoadedCatalog,
    entry_curve,
    load_catalog,
    machine_summaries,
    read_head,
)
from benchlab.errors import BenchlabError
from benchlab.identity import SERIES_FIELDS, SERIES_NOTE, join_unrecorded_threads, series_of
from benchlab.layout import Store, read_model
from benchlab.models import MachineInventory, MachineSpecs
from benchlab.query.colcache import Unanswerable, open_columns

if TYPE_CHECKING:
    from benchlab.query.colcache import Columns

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PublicData:
    """The public catalog (entry dicts), the machine inventory and the public specs."""

    catalog: LoadedCatalog
    inventory: MachineInventory = field(default_factory=MachineInventory)
    specs: Mapping[str, MachineSpecs] = field(default_factory=dict)
    store_root: Path | None = None
    fetch: Callable[[list[Entry]], list[Entry]] | None = None
    """Full entries of light ones (`load_site`); None where every run is loaded in full."""
    _upgraded: set[int] = field(default_factory=set, compare=False, repr=False)
    _machine_ids: list[Any] = field(default_factory=lambda: [None, []], compare=False, repr=False)

    def full(self, runs: Iterable[Entry]) -> list[Entry]:
        """The full entries of `runs` (light or full), in their order."""
        runs = list(runs)
        if self.fetch is None:
            return runs
        light = [r for r in runs if id(r) not in self._upgraded]
        fetched = {e["run_id"]: e for e in self.fetch(light)} if light else {}
        return [fetched.get(r["run_id"], r) for r in runs]

    def upgrade(self, runs: Iterable[Entry]) -> None:
        """Make light entries full in place: every list holding them then shows the run
        whole (a table row, a chart point with a field light entries leave out)."""
        if self.fetch is None:
            return
        light = [r for r in runs if id(r) not in self._upgraded]
        if not light:
            return
        fetched = {e["run_id"]: e for e in self.fetch(light)}
        for run in light:
            whole = fetched[run["run_id"]]
            run.clear()
            run.update(whole)
            self._upgraded.add(id(run))

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
        key = (id(self.catalog.runs), len(self.catalog.runs))
        if self._machine_ids[0] != key:  # one pass over the runs, not one per page
            ids = set(self.catalog.machines) | set(self.inventory.machines)
            ids.update(run["machine_id"] for run in self.catalog.runs)
            self._machine_ids[:] = [key, sorted(ids)]
        return list(self._machine_ids[1])


def load_public(store: Store, *, cached: bool = False) -> PublicData:
    """Read the public files of a store; a store without catalog.json is a one-line error
    (the reader's StoreError says to run `bench catalog build`). `cached`: through the
    store's query cache, as the query verbs read it, kept up to date there (the catalog build
    leaves it so: a 10,000-run catalog then loads in a seventh of the time), each batch curve
    decoded since the pages draw them."""
    catalog = load_catalog(store.catalog_path, store.query_cache if cached else None)
    for run in catalog.runs:
        if type(run.get("batch_curve")) is bytes:
            run["batch_curve"] = entry_curve(run)
    inventory, specs = _machines(store, catalog)
    return PublicData(catalog=catalog, inventory=inventory, specs=specs, store_root=store.root)


def load_site(store: Store, *, min_bytes: int | None = -1) -> PublicData:
    """The public data the site reads: light entries from the columnar query cache where it
    answers a v3 catalog (see the module docstring), else `load_public`. `min_bytes` as in
    `query.colcache.open_columns` (default: $BENCHLAB_QUERY_COLUMNS and its threshold)."""
    if not store.catalog_path.is_file():
        return load_public(store, cached=True)
    columns = open_columns(store, min_bytes=min_bytes)
    if columns is None:
        return load_public(store, cached=True)
    was_enabled = gc.isenabled()
    gc.disable()  # as read.load_catalog: a million new dicts, no cycles among them
    try:
        head = read_head(store.catalog_path)  # any fault: load_public names it
        if head.get("$schema") != CATALOG_V3:
            return load_public(store, cached=True)
        runs, where = _light_entries(columns)
    except (BenchlabError, OSError, ValueError, Unanswerable):
        logger.debug("site: columns not usable for %s", store.catalog_path, exc_info=True)
        return load_public(store, cached=True)
    finally:
        if was_enabled:
            gc.enable()
    # The columns hold the runs as stored: those without a recorded thread count join their
    # series here, as `catalog.read` joins them for every loaded catalog (ARCHITECTURE.md,
    # Measurement identity), and a full entry read back takes what the join gave its run.
    join_unrecorded_threads(runs)
    catalog = _v3_catalog(store.catalog_path, head, runs)
    inventory, specs = _machines(store, catalog)
    rows = {run["run_id"]: row for run, row in zip(runs, where, strict=True)}

    def fetch(entries: list[Entry]) -> list[Entry]:
        full = columns.entries([rows[e["run_id"]] for e in entries])
        for light, whole in zip(entries, full, strict=True):
            if SERIES_NOTE in light:
                whole.update({key: light[key] for key in ("tags", SERIES_NOTE)})
                if light["series"] != series_of(whole):  # it joined a series
                    whole["series"] = light["series"]
        return full

    return PublicData(
        catalog=catalog, inventory=inventory, specs=specs, store_root=store.root, fetch=fetch
    )


_UTC_STAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")


def _v3_catalog(path: Path, head: dict[str, Any], runs: list[Entry]) -> LoadedCatalog:
    """The machine summaries and `last_updated` as `read._check_v3` derives them, by
    `order.machine_activity`. `runs` come oldest first as strings sort; among stamps of
    the plain UTC form the time key sorts as the strings do, so `machine_activity` needs
    only each machine's last such run and every run of another form (a million parses of
    a timestamp cost seconds)."""
    machines = head.get("machines", {})
    plain = _UTC_STAMP.fullmatch
    candidates = [r for r in runs if not plain(r["timestamp"])]
    seen: set[str] = set()
    for run in reversed(runs):
        if run["machine_id"] not in seen and plain(run["timestamp"]):
            seen.add(run["machine_id"])
            candidates.append(run)
    if any(time_key(r["timestamp"])[0] == 0 for r in candidates):
        candidates = runs  # a stamp that is no date (month 13) sorts below every date
    _, last, newest = machine_activity(candidates)
    counts = Counter(run["machine_id"] for run in runs)
    return LoadedCatalog(path, runs, machine_summaries(machines, counts, last), newest)


def _chronological_rows(ids: Any, stamps: Any) -> Any:
    """Row order by timestamp, then run id (`filters.chronological`); UTF-8 bytes sort as
    their strings do (see query.colcache). One sort of the timestamps, then the few rows
    that share one ordered by id: sorting the long ids of every row costs a second more."""
    import numpy as np

    order = np.argsort(stamps, kind="stable")
    ordered = stamps[order]
    tied = np.flatnonzero(ordered[1:] == ordered[:-1])
    if tied.size:
        starts = tied[np.r_[True, tied[1:] != tied[:-1] + 1]]
        ends = tied[np.r_[tied[1:] != tied[:-1] + 1, True]] + 2
        for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
            group = order[start:end]
            order[start:end] = group[np.argsort(ids[group], kind="stable")]
    return order


_LIGHT_CODES = ("series", "model", "status", "tags", "version", "revision")


def _light_entries(columns: Columns) -> tuple[list[Entry], list[int]]:
    """Every run as a light entry, oldest first (by timestamp, then run id, as
    `filters.chronological` orders them): the identity fields of its series (read from one
    full entry per series: a series is those fields, so every run of it shares them), its
    own model name, version, status and tags (one shared base dict per distinct set of
    those), then its run id, timestamp and metrics. Also returns each one's row in
    `columns`, where its full entry is read back."""
    import numpy as np

    n = columns.n
    tables = columns.tables
    codes = np.stack([columns.array(f"code:{name}").astype(np.int64) for name in _LIGHT_CODES])
    series_codes = codes[0]
    _, first = np.unique(series_codes, return_index=True)
    templates: dict[int, Entry] = {}
    for row, entry in zip(first.tolist(), columns.entries(first.tolist()), strict=True):
        templates[int(series_codes[row])] = {k: entry[k] for k in SERIES_FIELDS if k in entry}
    ids = columns.strings("run_ids", np.arange(n))
    stamps = columns.strings("stamps", np.arange(n))
    order = _chronological_rows(ids, stamps)
    combos, inverse = np.unique(codes.T, axis=0, return_inverse=True)
    tags_t = [list(tags) for tags in tables["tags"]]  # shared: never changed in place
    bases = []
    for s, m, st, tg, v, rv in combos.tolist():
        model, model_id = tables["model"][m]
        version, build, commit = tables["version"][v]
        bases.append(
            {
                **templates[s],
                "model": model,
                "model_id": model_id,
                "series": tables["series"][s],
                "status": tables["status"][st],
                "tags": tags_t[tg],
                "backend_version": version,
                "backend_build": build,
                "backend_commit": commit,
                "revision": tables["revision"][rv],
                # Filled per run below: a base holding every key already is copied whole
                # and overwritten in place, a third faster than growing each copy.
                **dict.fromkeys(("run_id", "timestamp", *METRICS)),
            }
        )
    metrics = []
    for metric in METRICS:
        values = columns.array(f"metric:{metric}")[order]
        missing = np.isnan(values)
        column: list[Any] = np.where(missing, 0.0, values).tolist()
        for i in np.flatnonzero(missing).tolist():
            column[i] = None
        for i in np.flatnonzero(columns.array(f"int:{metric}")[order]).tolist():
            column[i] = int(column[i])
        metrics.append(column)
    # Every metric the catalog knows (`catalog.read.METRICS`), so a light entry holds what
    # the full one does whichever metrics are added; as fast as naming them one by one.
    entries = []
    for c, rid, ts, *values in zip(
        inverse.reshape(-1)[order].tolist(), ids[order].tolist(), stamps[order].tolist(),
        *metrics, strict=True,
    ):  # fmt: skip
        entry = {**bases[c], "run_id": rid.decode(), "timestamp": ts.decode()}
        entry.update(zip(METRICS, values, strict=True))
        entries.append(entry)
    return entries, order.tolist()


def _machines(
    store: Store, catalog: LoadedCatalog
) -> tuple[MachineInventory, dict[str, MachineSpecs]]:
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
    return inventory, specs
