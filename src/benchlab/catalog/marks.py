"""Outlier marks in the catalog head: a judgement about any run of the catalog, merged
between clones like a retraction (ARCHITECTURE.md, The catalog: marks and verdicts).

Why in the head and not in the run's record: an imported run has no record.json, and another
clone's run has none here; a mark written into the tracked head reaches every clone with the
next pull. Why newest-wins records rather than a plain set of ids: `--clear` must be able to
undo a mark that another clone still holds, so a clear is a newer record (`state: cleared`),
never a deletion; per run the record with the greatest (`at`, canonical JSON) wins, which is
commutative, associative and idempotent, as the merge driver needs.

Readers present the winner on the entries they hand out (`present`): a marked run carries
`stats.OUTLIER_TAG` in `tags` (and `outlier_reason`), a cleared one does not, even where its
shard line carries the tag its record had; `stats.is_outlier(entry)` stays the one test.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from benchlab.catalog.format import CLEARED, MARKED, MARKS
from benchlab.stats import OUTLIER_TAG

REASON_FIELD = "outlier_reason"
"""The key under which readers hand out a marked run's reason (never stored in a shard)."""

Mark = dict[str, Any]


def _rank(mark: Mark) -> tuple[str, bytes]:
    return str(mark.get("at", "")), orjson.dumps(mark, option=orjson.OPT_SORT_KEYS)


def merge_marks(*sides: Iterable[Mark]) -> dict[str, Mark]:
    """The winning mark of each run id across every side: the newest (`at`), ties broken
    by the canonical JSON, so every clone and the merge driver pick the same one."""
    out: dict[str, Mark] = {}
    for side in sides:
        for mark in side:
            held = out.get(mark["run_id"])
            if held is None or _rank(mark) > _rank(held):
                out[mark["run_id"]] = mark
    return out


def head_marks(head: Mapping[str, Any]) -> dict[str, Mark]:
    """A checked head's marks, the winner per run id."""
    return merge_marks(head.get(MARKS, ()))


def new_mark(run_id: str, *, at: str, clear: bool = False, reason: str | None = None) -> Mark:
    """One mark record (`format.MARK_FIELDS`): `at` is UTC, `YYYY-MM-DDThh:mm:ssZ`."""
    mark: Mark = {"run_id": run_id, "state": CLEARED if clear else MARKED, "at": at}
    if reason and not clear:
        mark["reason"] = reason
    return mark


def present(entry: dict[str, Any], mark: Mark | None) -> dict[str, Any]:
    """The entry as readers hand it out under its run's winning mark: a new dict where the
    mark changes it (entries may share their tag lists with a cache), else the entry."""
    if mark is None:
        return entry
    tags = [t for t in entry.get("tags") or () if t != OUTLIER_TAG]
    out = dict(entry)
    out.pop(REASON_FIELD, None)
    if mark.get("state") == MARKED:
        tags = sorted([*tags, OUTLIER_TAG])
        if mark.get("reason"):
            out[REASON_FIELD] = mark["reason"]
    out["tags"] = tags
    return out


def present_all(entries: list[dict[str, Any]], marks: Mapping[str, Mark]) -> list[dict[str, Any]]:
    """`present` over a reader's entries (the marks are few: a pass only when any exist)."""
    if not marks:
        return entries
    return [present(e, marks.get(e["run_id"])) for e in entries]
