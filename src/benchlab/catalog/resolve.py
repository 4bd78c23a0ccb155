"""`bench catalog resolve RUN_ID --keep N`: settle a conflict by hand.

Why a list in the head rather than deleting the other copies: the shard merge is a union, so
a copy deleted here comes back with the next pull of a clone that still holds it. The copies
set aside are named in catalog.json's `rejected` (`<run id>@<digest of what it measured>`),
a union like `retracted`: every clone, reader and build drops them, and a copy no one has
judged yet (a third clone's) is a conflict again rather than silently outvoted.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

from benchlab.catalog.document import parse_catalog
from benchlab.catalog.format import MARKS, POLICY
from benchlab.catalog.gate import MAX_SHARD_BYTES, read_catalog
from benchlab.catalog.merge import check_lines, head_document, static_of
from benchlab.catalog.order import (
    CONFLICT,
    REJECTED,
    copies,
    copy_digest,
    describe_conflict,
    effective_rejections,
    next_round,
    rejected_by_run,
    rejected_item,
    settle,
    without_digests,
    without_rejected,
)
from benchlab.catalog.shards import iter_shards, parse_lines, render_shard
from benchlab.catalog.text import render
from benchlab.catalog.views import ViewWriter, remove_views, view_names
from benchlab.errors import QueryError
from benchlab.files import read_bytes
from benchlab.ids import check_id
from benchlab.layout import Store, atomic_write_bytes, loads_json, write_set
from benchlab.redact.policy import store_policy


def _holding(path: Path, run_id: str) -> list[tuple[Path, str, list[dict[str, Any]]]]:
    """(path, name, lines) of every shard with a line of `run_id` (found by its bytes
    first: only those shards are parsed)."""
    needle = f'"run_id":"{run_id}"'.encode()
    out = []
    for name, shard_path in iter_shards(path):
        raw = read_bytes(shard_path, cap=MAX_SHARD_BYTES, name=name)
        if needle in raw:
            lines = parse_lines(raw, name)
            if any(line["run_id"] == run_id for line in lines):
                out.append((shard_path, name, lines))
    return out


def judge(
    run_id: str, found: list[dict[str, Any]], rejected: Iterable[str], keep: int
) -> tuple[dict[str, Any], list[dict[str, Any]], set[str]]:
    """The settling itself, on the lines that hold `run_id` (every copy of it present) and
    the head's `rejected`: (copy kept, copies rejected, the new `rejected`). The rejections
    are recorded in a round past every round the run has, so they supersede a round two
    clones voided by choosing differently (`order.effective_rejections`)."""
    judged = set(rejected)
    rounds = rejected_by_run(judged).get(run_id, {})
    present = {copy_digest(c) for line in found for c in copies(line)}
    digests = effective_rejections(rounds, present)
    left = [c for line in found for c in copies(line) if copy_digest(c) not in digests]
    if not left:
        raise QueryError(f"no run {run_id!r} in the catalog")
    line = settle(left)
    if CONFLICT not in line:
        raise QueryError(f"{run_id}: not in conflict (its copies measure the same)")
    held = line[CONFLICT]
    if not 1 <= keep <= len(held):
        raise QueryError(f"--keep {keep}: {run_id} has copies 1 to {len(held)}")
    kept: dict[str, Any] = held[keep - 1]
    rejected_now = [c for i, c in enumerate(held, start=1) if i != keep]
    round_ = next_round(rounds)
    judged |= {rejected_item(run_id, copy_digest(c), round_) for c in rejected_now}
    return kept, rejected_now, judged


def resolve_v3(store: Store, run_id: str, keep: int) -> dict[str, Any]:
    """Keep copy `keep` (1-based, in the order `bench catalog validate` lists them) of a run
    in conflict; the others join the head's `rejected` and leave every shard. Returns the
    copy kept. The caller holds the catalog lock. The head passes the gate first; what the
    head publishes passes the store's redaction policy (not the working directory's)."""
    with store_policy(store.root):
        return _resolve_v3(store, run_id, keep)


def _resolve_v3(store: Store, run_id: str, keep: int) -> dict[str, Any]:
    check_id(run_id, "run id")
    path = store.catalog_path
    raw = read_catalog(path)
    if raw is None:
        raise QueryError(f"{path}: no catalog; run `bench catalog build` first")
    head = loads_json(raw, path)
    parse_catalog(path, head)  # the gate, and an old format refused by name
    shards = _holding(path, run_id)
    inline = [*head.get("runs", []), *head.get("conflicts", [])]
    found = [line for _, _, lines in shards for line in lines if line["run_id"] == run_id]
    found += [line for line in inline if line["run_id"] == run_id]
    try:
        kept, rejected, judged = judge(run_id, found, head.get(REJECTED, []), keep)
    except QueryError as exc:
        raise QueryError(f"{path}: {exc}") from None
    present = {copy_digest(c) for line in found for c in copies(line)}
    gone = effective_rejections(rejected_by_run(judged)[run_id], present)
    written = [(shard_path, _judged(lines, run_id, gone)) for shard_path, _, lines in shards]
    for (_, name, _), (_, out) in zip(shards, written, strict=True):
        check_lines(name, out)
    pending = _judged(inline, run_id, gone)
    static = static_of(head.get("machines", {}))
    doc = head_document(
        static, head.get("retracted", []), pending, judged, head.get(MARKS, []), head.get(POLICY)
    )
    with write_set(store.write_aside, store.root):  # shards and head: all replaced, or none
        for shard_path, out in written:
            atomic_write_bytes(shard_path, render_shard(out))
        atomic_write_bytes(path, render(doc).encode("utf-8"))
    _views(store, kept, rejected)
    return kept


def _judged(lines: list[dict[str, Any]], run_id: str, gone: set[str]) -> list[dict[str, Any]]:
    """`lines` with the rejected copies of `run_id` taken out (a line left empty goes)."""
    out = []
    for line in lines:
        kept = without_digests(line, gone) if line["run_id"] == run_id else line
        if kept is not None:
            out.append(kept)
    return out


def _views(store: Store, kept: dict[str, Any], rejected: list[dict[str, Any]]) -> None:
    """The kept copy's views are written; names only a rejected copy had go."""
    names = set(view_names(kept))
    ViewWriter(store.runs_dir, compare=True, store_root=store.root).put(kept, view_names(kept))
    stale = {n for c in rejected for n in view_names(c)} - names
    if stale:
        remove_views(store, stale)


def find_conflicts(path: Path, head: dict[str, Any]) -> list[str]:
    """Every run whose copies (in one conflict line, or in two shards, or inline in the head)
    measure differently once the head's `rejected` copies are set aside, retracted runs left
    out: one line each (`order.describe_conflict`), sorted by run id. Ids are counted in one
    pass; only the shards that hold a run twice are read again."""
    retracted = set(head.get("retracted", []))
    inline = [*head.get("runs", []), *head.get("conflicts", [])]
    first: dict[str, str] = {}
    holders: dict[str, set[str]] = {}
    for name, ids in _ids(path, inline):
        for run_id, conflict in ids:
            if conflict or run_id in first:
                holders.setdefault(run_id, {first.get(run_id, name)}).add(name)
            first.setdefault(run_id, name)
    if not holders:
        return []
    wanted = {name for names in holders.values() for name in names}
    found: dict[str, list[dict[str, Any]]] = {}
    for _name, lines in _sources(path, inline, wanted):
        for line in lines:
            if line["run_id"] in holders:
                found.setdefault(line["run_id"], []).append(line)
    rejected = rejected_by_run(head.get(REJECTED, []))
    out = []
    for run_id in sorted(found.keys() - retracted):
        settled = without_rejected(settle(found[run_id]), rejected.get(run_id, {}))
        if settled is not None and CONFLICT in settled:
            out.append(describe_conflict(settled))
    return out


def held_ids(path: Path, head: dict[str, Any]) -> set[str]:
    """Every run id the catalog holds a line of (conflicts included, retracted not)."""
    inline = [*head.get("runs", []), *head.get("conflicts", [])]
    ids = {run_id for _, found in _ids(path, inline) for run_id, _ in found}
    return ids - set(head.get("retracted", []))


_CONFLICT_LINE = b'{"conflict":['
_RUN_ID = b'"run_id":"'


def _ids(path: Path, inline: list[dict[str, Any]]) -> Iterator[tuple[str, list[tuple[str, bool]]]]:
    """(name, [(run id, conflict line?)]) of the head and every shard, without parsing the
    lines (validate has checked them): a canonical line's keys are sorted, so a conflict
    line starts with its key and an entry's run id is its one `"run_id":"...` (ids are never
    escaped); any other line is parsed."""
    yield path.name, [(line["run_id"], CONFLICT in line) for line in inline]
    for name, shard_path in iter_shards(path):
        out = []
        raw = read_bytes(shard_path, cap=MAX_SHARD_BYTES, name=name)
        for line in raw.split(b"\n"):
            if not line:
                continue
            start = line.find(_RUN_ID)
            end = line.find(b'"', start + len(_RUN_ID)) if start >= 0 else -1
            if line.startswith(_CONFLICT_LINE) or end < 0 or line.find(_RUN_ID, end) >= 0:
                data = orjson.loads(line)
                out.append((data["run_id"], CONFLICT in data))
            else:
                out.append((line[start + len(_RUN_ID) : end].decode(), False))
        yield name, out


def _sources(
    path: Path, inline: list[dict[str, Any]], names: set[str] | None = None
) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """(name, lines) of the head's inline lines and of every shard (or those in `names`)."""
    if names is None or path.name in names:
        yield path.name, inline
    for name, shard_path in iter_shards(path):
        if names is None or name in names:
            yield name, parse_lines(read_bytes(shard_path, cap=MAX_SHARD_BYTES, name=name), name)
