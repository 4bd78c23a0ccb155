"""The union merge keyed by run id, and the derived state recomputed from its entries.

Merge is commutative, associative and idempotent: when two entries share an id,
`order.settle` keeps one copy where they measure the same (the greater canonical JSON) and
every copy, as a conflict line, where they do not, so every clone and the git merge driver
agree on the same bytes and no clone's numbers are replaced by a rule. A head's pending
conflict lines sit under `conflicts`, apart from its `runs`. Retraction is a union
too: a run id in any side's `retracted` list is gone from the result, so a merge can never
bring a withdrawn run back; so is `rejected` (copies `bench catalog resolve` set aside).
Derived state (ARCHITECTURE.md, invariant 6) is never merged: the machine summaries' counts
and `last_updated` are recomputed from the entries by the reader. (`winner`, re-exported
here, only settles two of one clone's own run dirs of a run; see `order`.)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from benchlab.catalog.document import parse_shard_entries
from benchlab.catalog.format import CATALOG_V3, MARK_REASON_MAX, MARKS, POLICY
from benchlab.catalog.marks import stored_marks
from benchlab.catalog.order import (  # noqa: F401 (entry_rank, winner: re-exported)
    CONFLICT,
    REJECTED,
    entry_rank,
    settle,
    time_key,
    winner,
)
from benchlab.catalog.shards import LAYOUT, union
from benchlab.errors import SchemaError
from benchlab.layout import (
    canonical_json,
)
from benchlab.redact import scrub_public

INVENTORY_SCHEMA = "benchmark/machine-inventory.v1"
SUMMARY_STATIC = ("os", "arch", "cpu_cores", "gpu")
"""Machine summary fields that come from specs (the rest is counted from the entries)."""


def check_lines(where: str, lines: list[dict[str, Any]]) -> None:
    """Validate lines of a shard or document as catalog entries (pydantic), conflict lines
    included: each holds two or more copies of its own run, in the form `settle` writes.
    Copies are checked in layers (each run's first copy, then its second, ...) so that one
    run's copies are never mistaken for duplicate ids."""
    layers: list[list[dict[str, Any]]] = [[]]
    for line in lines:
        if CONFLICT not in line:
            layers[0].append(line)
            continue
        held = line[CONFLICT]
        run_id = line["run_id"]
        if (
            set(line) != {"run_id", CONFLICT}
            or type(held) is not list
            or len(held) < 2
            or not all(type(c) is dict and c.get("run_id") == run_id for c in held)
        ):
            raise SchemaError(
                f"{where}: {run_id}: $.conflict: expected two or more copies of this run"
            )
        if settle((line,)) != line:
            raise SchemaError(
                f"{where}: {run_id}: $.conflict: copies not as a merge writes them "
                "(equal measurements, or out of order); rebuild with `bench catalog build`"
            )
        for depth, copy in enumerate(held):
            while len(layers) <= depth:
                layers.append([])
            layers[depth].append(copy)
    for layer in layers:
        if layer:
            parse_shard_entries(where, layer)


def check_conflicts(where: str, doc: dict[str, Any]) -> list[dict[str, Any]]:
    """A document's `conflicts` (a v2 catalog's, or a v3 head's from a merge with a v2
    side): an array of conflict lines, each checked (`check_lines`). Returns them."""
    lines = doc.get("conflicts", [])
    if not isinstance(lines, list) or not all(
        isinstance(line, dict) and isinstance(line.get("run_id"), str) and CONFLICT in line
        for line in lines
    ):
        raise SchemaError(f"{where}: $.conflicts: expected an array of conflict lines")
    check_lines(where, lines)
    return lines


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


def merge_static(*sides: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for side in sides:
        for key, value in side.items():
            out[key] = _merge_value(out.get(key), value)
    return out


# --- derived state ------------------------------------------------------------------------


def date_of(timestamp: Any) -> str:
    known, key = time_key(timestamp)
    return key[:10] if known else str(timestamp)[:10] or "unknown"


def static_of(machines: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {
        m: {k: v for k, v in summary.items() if k in SUMMARY_STATIC}
        for m, summary in machines.items()
    }


def _lines_of(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """A head's pending runs and its conflict lines (kept apart from `runs` in the file)."""
    return [*doc.get("runs", []), *doc.get("conflicts", [])]


def head_document(
    static: dict[str, dict[str, Any]],
    retracted: Iterable[str] = (),
    pending: Iterable[dict[str, Any]] = (),
    rejected: Iterable[str] = (),
    marks: Iterable[dict[str, Any]] = (),
    policy: str | None = None,
) -> dict[str, Any]:
    """The tracked v3 catalog.json: only what is not derived from the entries.

    `static` is each machine's spec fields (os, arch, cores, gpu), kept for every machine
    ever described (a machine whose runs were all retracted keeps its description: static
    fields only grow, so the merge of two heads is a plain union). `pending` are entries a
    merge brought in from a v2 side, kept inline until the next build shards them.
    `rejected`: copies `bench catalog resolve` set aside (`order.REJECTED`), a union too.
    `marks`: outlier marks (`catalog.marks`), the newest per run, a retracted run's dropped;
    a reason is public text, so it passes the redaction policy here as machines do.
    `policy`: the redaction policy version the published lines were last checked under
    (`catalog.published`); None leaves it out, and the next build checks every line again.
    """
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
    if policy is not None:
        doc[POLICY] = policy
    if withdrawn:
        doc["retracted"] = withdrawn
    judged = sorted(set(rejected))
    if judged:
        doc[REJECTED] = judged
    kept_marks = [_public_mark(mark) for mark in stored_marks(marks) if mark["run_id"] not in gone]
    if kept_marks:
        doc[MARKS] = kept_marks
    kept = sorted((e for e in pending if e["run_id"] not in gone), key=lambda e: e["run_id"])
    runs = [entry for entry in kept if CONFLICT not in entry]
    conflicts = [entry for entry in kept if CONFLICT in entry]
    if runs:
        doc["runs"] = runs
    if conflicts:
        doc["conflicts"] = conflicts
    return doc


def _public_mark(mark: dict[str, Any]) -> dict[str, Any]:
    """A mark with its reason through the redaction policy (bounded again after it)."""
    reason = mark.get("reason")
    if not reason:
        return mark
    return {**mark, "reason": str(scrub_public(reason))[:MARK_REASON_MAX]}


def merge_heads(*docs: dict[str, Any]) -> dict[str, Any]:
    """The union of v3 catalog.json versions (the git merge driver): static fields,
    `retracted`, `rejected` and any inline runs (`runs`, `conflicts`) united; `marks`, the
    newest per run; `policy` kept where every side has the same."""
    static = merge_static(*(static_of(doc.get("machines", {})) for doc in docs))
    retracted = {run_id for doc in docs for run_id in doc.get("retracted", [])}
    pending = union(*(_lines_of(doc) for doc in docs))
    rejected = {item for doc in docs for item in doc.get(REJECTED, [])}
    marks = [mark for doc in docs for mark in doc.get(MARKS, [])]
    # One version on every side is kept; sides checked under different policies leave it
    # out, so the next build on any clone checks every line again (commutative).
    versions = {doc.get(POLICY) for doc in docs}
    policy = versions.pop() if len(versions) == 1 else None
    return head_document(static, retracted, pending.values(), rejected, marks, policy)


def merge_inventories(*docs: dict[str, Any]) -> dict[str, Any]:
    machines = merge_static(*(doc.get("machines", {}) for doc in docs))
    return {"$schema": INVENTORY_SCHEMA, "machines": dict(sorted(machines.items()))}
