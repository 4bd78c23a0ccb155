"""What is published stays re-checked (ARCHITECTURE.md, Publishing and redaction): when the
redaction policy's version (`catalog.published.policy_version`) differs from the one the
head records, the build holds every published line to today's policy, not only the run
dirs it reads.

A line was checked when it was built, under the detectors and value shapes of that day (on
this clone or another). A new tell pattern in redaction.yaml, or a value shape made
stricter by a newer benchlab, leaves those lines as they were until each is built again;
an incremental build reads only the run dirs that changed, and another clone's lines have
no run dir here at all. So a build that finds the head's version stale passes every line
it did not read fresh through `extract.check_public_entry`, as a run dir's entry is:
a value not of its public shape is withheld (emptied) and the line written again; a line
whose ids the policy now refuses (a machine or model id that is a tell) is withheld whole,
named with the fix. Then the head records the new version, and later builds skip this.
It costs one pass over the shard lines (decoded, checked, the memo of `passed` shared),
once per policy change.
"""

from __future__ import annotations

from typing import Any

import orjson

from benchlab.catalog.extract import check_public_entry
from benchlab.catalog.format import decode_entry
from benchlab.catalog.lines import point_of
from benchlab.catalog.order import CONFLICT, copies, settle
from benchlab.catalog.shardbook import ShardBook
from benchlab.catalog.shards import encode_line
from benchlab.errors import SchemaError
from benchlab.redact.policy import Policy

LOADED_LIMIT = 400_000
"""Shard lines held before the rechecked shards are written out and dropped."""


def recheck_published(book: ShardBook, policy: Policy, hosts: set[str]) -> int:
    """Hold every line of the catalog that this build did not place fresh to `policy`;
    returns how many lines changed (fields withheld, or the line withheld whole)."""
    passed: set[tuple[str, str]] = set()
    changed = 0
    for sid in range(len(book.shards)):
        shard = book.shards[sid]
        if shard is None:
            continue
        for run_id, line in list(book.lines(sid).items()):
            if run_id in book.fresh_ids:
                continue  # read from its run dir by this build, under this policy
            entry = decode_entry(orjson.loads(line))
            kept, why = _checked(entry, policy, hosts, passed)
            if kept is None:
                book.remove(sid, run_id)
                book.removed.append(entry)
                book.result.warnings.append(
                    f"{shard.name}: {run_id}: withheld: {why}; the redaction policy now "
                    "refuses its ids (retract it with `bench catalog retract`, or allow the "
                    "value in redaction.yaml)"
                )
                changed += 1
                continue
            new = encode_line(kept)
            if new != line:
                book.put(sid, run_id, new, point_of(kept))
                if CONFLICT not in kept:
                    book.touched[run_id] = kept
                changed += 1
        if book.loaded_lines > LOADED_LIMIT:
            book.flush()
    return changed


def _checked(
    entry: dict[str, Any], policy: Policy, hosts: set[str], passed: set[tuple[str, str]]
) -> tuple[dict[str, Any] | None, str]:
    """(the line as today's policy publishes it, or None with why it is withheld whole)."""
    held = copies(entry)
    out: list[dict[str, Any]] = []
    why = ""
    for copy in held:
        mine = dict(copy)
        try:
            check_public_entry(mine, hosts, policy, passed)
        except SchemaError as exc:
            why = str(exc)
            continue
        out.append(mine)
    if not out:
        return None, why
    return (out[0] if len(out) == 1 else settle(out)), ""
