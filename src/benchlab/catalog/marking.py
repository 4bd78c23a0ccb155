"""`bench mark-outlier` on the catalog: one mark record added to the tracked head.

Why a module of its own: writing the head needs the lock, the gate and `head_document`,
while `catalog.marks` is the leaf every reader and the merge import (ARCHITECTURE.md, The
catalog: marks and verdicts). The run may be any run of the catalog: an imported run or
another clone's run has no record.json here, and that is the point of keeping marks in the
head.
"""

from __future__ import annotations

import calendar
import difflib
import time
from typing import Any

from benchlab.catalog.document import parse_catalog
from benchlab.catalog.format import MARK_REASON_MAX, MARKS, POLICY, Entry
from benchlab.catalog.gate import MAX_TEXT, read_catalog, text_problem
from benchlab.catalog.lock import catalog_lock
from benchlab.catalog.marks import Mark, aside_reason, head_marks, new_mark
from benchlab.catalog.merge import head_document, static_of
from benchlab.catalog.order import REJECTED
from benchlab.catalog.read import load_catalog
from benchlab.catalog.text import render
from benchlab.errors import NoMatchError, QueryError, SchemaError, StoreError
from benchlab.ids import check_id
from benchlab.layout import Store, atomic_write_bytes, loads_json, write_error
from benchlab.redact import default_policy
from benchlab.redact.policy import store_policy
from benchlab.redact.shapes import value_shape_ok

_STAMP = "%Y-%m-%dT%H:%M:%SZ"


def check_reason(reason: str | None) -> str | None:
    """A mark's reason as it may be published, or QueryError naming `--reason`: at most
    MARK_REASON_MAX characters, no control or bidi character, and nothing the store's
    redaction policy calls a tell (a host name, a path, a secret): it is public text."""
    if reason is None or not reason.strip():
        return None
    reason = reason.strip()
    problem = text_problem(reason, limit=min(MAX_TEXT, MARK_REASON_MAX))
    if problem is not None:
        raise QueryError(f"--reason: {problem}")
    if not value_shape_ok("outlier_reason", reason, default_policy()):
        raise QueryError(
            "--reason: holds what the redaction policy keeps out of public files "
            "(a host name, a path, a secret); say it without"
        )
    return reason


def _suggest(run_id: str, ids: list[str]) -> str:
    """`; did you mean X?` over the ids that share the first part of the spec id (cheap
    at a million runs: difflib only sees those)."""
    stem = run_id.split("-", 1)[0]
    near = [i for i in ids if i.startswith(stem)][:5000]
    found = difflib.get_close_matches(run_id, near, n=1, cutoff=0.6)
    return f"; did you mean {found[0]}?" if found else ""


def find_entry(store: Store, run_id: str, *, local: bool = False) -> Entry | None:
    """The catalog entry of `run_id`, or NoMatchError (one line, with a suggestion). With
    `local` (this clone has the run's record), a run not in the catalog yet, or no catalog
    at all, is None instead: the next build publishes it."""
    check_id(run_id, "run id")
    try:
        catalog = load_catalog(store.catalog_path, store.query_cache)
    except SchemaError:
        raise
    except StoreError:
        if local:
            return None
        raise
    found = catalog.find(run_id)
    if found is None and not local:
        ids = [e["run_id"] for e in catalog.runs]
        raise NoMatchError(
            f"{store.relative(store.catalog_path)}: no run {run_id!r} in the catalog"
            + _suggest(run_id, ids)
        )
    return found


def utc_now() -> str:
    """The time a mark is made, as the head stores it (UTC, to the second)."""
    return time.strftime(_STAMP, time.gmtime())


def write_mark(
    store: Store,
    run_id: str,
    *,
    clear: bool = False,
    reason: str | None = None,
    at: str | None = None,
) -> Mark:
    """Add one mark record to catalog.json (under the catalog lock, atomically); returns
    it. The head passes the gate first: a hostile head is refused, never rewritten."""
    with store_policy(store.root):  # the marked store's redaction policy, not the cwd's
        checked = check_reason(reason)
    mark = new_mark(run_id, at=at or utc_now(), clear=clear, reason=checked)
    try:
        with store_policy(store.root), catalog_lock(store):
            return _write(store, mark)
    except OSError as exc:
        raise write_error(exc) from None


def _after(stamp: str) -> str:
    """One second after a mark's `at`."""
    return time.strftime(_STAMP, time.gmtime(calendar.timegm(time.strptime(stamp, _STAMP)) + 1))


def _write(store: Store, mark: Mark) -> Mark:
    """The mark into the head. A mark made here always wins over the one in force for its
    run (a clock behind, or two marks in one second): its `at` is moved past it. Marks of
    the run that readers set aside (dated in the future) leave the head: the run was just
    judged here, and a mark from the future would otherwise outrank every later one (a
    `--clear` that reported success and changed nothing)."""
    path = store.catalog_path
    raw = read_catalog(path)
    if raw is None:
        raise StoreError(f"{path}: file not found; run `bench catalog build` first")
    head: dict[str, Any] = loads_json(raw, path)
    parse_catalog(path, head)  # the gate, and an old format refused by name
    run_id = mark["run_id"]
    held = head_marks(head).get(run_id)
    mine = [m for m in head.get(MARKS, []) if m["run_id"] == run_id]
    aside = [m for m in mine if aside_reason(m) is not None]
    if held is not None and held["at"] >= mark["at"]:
        mark = {**mark, "at": _after(held["at"])}
    pending = [*head.get("runs", []), *head.get("conflicts", [])]
    doc = head_document(
        static_of(head.get("machines", {})),
        head.get("retracted", []),
        pending,
        head.get(REJECTED, []),
        [*(m for m in head.get(MARKS, []) if m["run_id"] != run_id or m not in aside), mark],
        head.get(POLICY),
    )
    atomic_write_bytes(path, render(doc).encode("utf-8"), root=store.root)
    return {**mark, "replaced": [f"{m['at']} ({aside_reason(m)})" for m in aside]}
