"""The union merge keyed by run id, and the derived state recomputed from its entries.

Merge is commutative, associative and idempotent: when two entries share an id, a fixed
rule picks the winner (ok over failed, then the newer timestamp, then the entry that says
more, then the greater canonical JSON), so every clone and the git merge driver agree on the
same bytes. "Says more" lets a v2 entry (full identity) win over the v1 copy of the same
run. Retraction is a union too: a run id in any side's `retracted` list is gone from the
result, so a merge can never bring a withdrawn run back. Derived state
(invariant 6) is never merged: the index, the machine summaries and `last_updated` are
recomputed from the entries every time.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from benchlab.catalog.order import (  # noqa: F401 (_entry_rank, winner: re-exported)
    _entry_rank,
    _time_key,
    machine_activity,
    winner,
)
from benchlab.catalog.upgrade import CATALOG_SCHEMA, CATALOG_V3, upgrade
from benchlab.ids import slug
from benchlab.layout import (
    canonical_json,
)
from benchlab.redact import scrub_public

INVENTORY_SCHEMA = "benchmark/machine-inventory.v1"
SUMMARY_STATIC = ("os", "arch", "cpu_cores", "gpu")
"""Machine summary fields that come from specs (the rest is counted from the entries)."""


def merge_entries(*sides: Iterable[dict]) -> dict[str, dict]:
    """Union of entry lists keyed by run id, ties settled by `winner`."""
    merged: dict[str, dict] = {}
    for side in sides:
        for entry in side:
            run_id = entry["run_id"]
            held = merged.get(run_id)
            merged[run_id] = entry if held is None else winner(held, entry)
    return merged


def _merge_value(a: Any, b: Any) -> Any:
    """Field-wise union of static descriptions (machine summaries, inventory entries)."""
    if a is None or a == b:
        return b
    if b is None:
        return a
    if isinstance(a, dict) and isinstance(b, dict):
        return {k: _merge_value(a.get(k), b.get(k)) for k in sorted(a.keys() | b.keys())}
    if isinstance(a, list) and isinstance(b, list) and all(isinstance(x, str) for x in (*a, *b)):
        return sorted(set(a) | set(b))
    return max(a, b, key=canonical_json)


def _merge_static(*sides: dict[str, dict]) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for side in sides:
        for key, value in side.items():
            out[key] = _merge_value(out.get(key), value)
    return out


# --- derived state ------------------------------------------------------------------------


def _date_of(timestamp: Any) -> str:
    known, key = _time_key(timestamp)
    return key[:10] if known else str(timestamp)[:10] or "unknown"


def finalize(
    entries: dict[str, dict], static: dict[str, dict], retracted: Iterable[str] = ()
) -> dict[str, Any]:
    """The catalog document: entries sorted by run id, derived state recomputed from them.

    `static` holds what specs say about each machine (os, arch, cores, gpu); the counts and
    last run come from the entries. A machine appears iff it has entries.
    """
    withdrawn = sorted(set(retracted))
    gone = set(withdrawn)
    runs = [entries[k] for k in sorted(entries) if k not in gone]
    by_model: dict[str, list[str]] = {}
    by_precision: dict[str, list[str]] = {}
    by_date: dict[str, list[str]] = {}
    for entry in runs:
        run_id = entry["run_id"]
        model_id = entry.get("model_id") or slug(entry["model"])
        by_model.setdefault(model_id, []).append(run_id)
        by_precision.setdefault(entry["precision"], []).append(run_id)
        by_date.setdefault(_date_of(entry["timestamp"]), []).append(run_id)
    counts, last, newest = machine_activity(runs)
    machines = {}
    for machine in sorted(counts):
        summary = {k: v for k, v in static.get(machine, {}).items() if k in SUMMARY_STATIC}
        summary.update(id=machine, runs=counts[machine], last_run=last[machine])
        machines[machine] = scrub_public({k: v for k, v in summary.items() if v is not None})
    doc: dict[str, Any] = {
        "$schema": CATALOG_SCHEMA,
        "version": "2.0",
        "machines": machines,
        "runs": runs,
        "index": {"by_model": by_model, "by_precision": by_precision, "by_date": by_date},
    }
    if withdrawn:
        doc["retracted"] = withdrawn
    if newest is not None:
        doc["last_updated"] = newest
    return doc


def _static_of(machines: dict[str, dict]) -> dict[str, dict]:
    return {
        m: {k: v for k, v in summary.items() if k in SUMMARY_STATIC}
        for m, summary in machines.items()
    }


def merge_catalogs(*docs: dict[str, Any]) -> dict[str, Any]:
    """The union of catalog documents (what the git merge driver writes); any v1 side is
    read as v2 first."""
    docs = tuple(upgrade(doc) for doc in docs)
    entries = merge_entries(*(doc.get("runs", []) for doc in docs))
    static = _merge_static(*(_static_of(doc.get("machines", {})) for doc in docs))
    retracted = {run_id for doc in docs for run_id in doc.get("retracted", [])}
    return finalize(entries, static, retracted)


def head_document(
    static: dict[str, dict],
    retracted: Iterable[str] = (),
    pending: Iterable[dict] = (),
) -> dict[str, Any]:
    """The tracked v3 catalog.json: only what is not derived from the entries.

    `static` is each machine's spec fields (os, arch, cores, gpu), kept for every machine
    ever described (a machine whose runs were all retracted keeps its description: static
    fields only grow, so the merge of two heads is a plain union). `pending` are entries a
    merge brought in from a v2 side, kept inline until the next build shards them.
    """
    from benchlab.catalog.shards import LAYOUT

    withdrawn = sorted(set(retracted))
    gone = set(withdrawn)
    machines = {
        m: scrub_public({k: v for k, v in s.items() if k in SUMMARY_STATIC and v is not None})
        for m, s in sorted(static.items())
    }
    doc: dict[str, Any] = {
        "$schema": CATALOG_V3,
        "version": "3.0",
        "shards": LAYOUT,
        "machines": machines,
    }
    if withdrawn:
        doc["retracted"] = withdrawn
    runs = sorted((e for e in pending if e["run_id"] not in gone), key=lambda e: e["run_id"])
    if runs:
        doc["runs"] = runs
    return doc


def merge_heads(*docs: dict[str, Any]) -> dict[str, Any]:
    """The union of catalog.json versions where at least one is v3 (the git merge driver).

    v3 with v3: static fields and `retracted` united. v3 with v1/v2: the single file's runs
    are kept inline (`runs`, merged by `winner` with any already pending), so nothing is lost
    and the next `bench catalog build` moves them into shards.
    """
    docs = tuple(upgrade(doc) for doc in docs)
    static = _merge_static(*(_static_of(doc.get("machines", {})) for doc in docs))
    retracted = {run_id for doc in docs for run_id in doc.get("retracted", [])}
    pending = merge_entries(*(doc.get("runs", []) for doc in docs))
    return head_document(static, retracted, pending.values())


def merge_inventories(*docs: dict[str, Any]) -> dict[str, Any]:
    machines = _merge_static(*(doc.get("machines", {}) for doc in docs))
    return {"$schema": INVENTORY_SCHEMA, "machines": dict(sorted(machines.items()))}
