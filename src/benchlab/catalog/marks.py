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
from benchlab.detect.stats import OUTLIER_TAG

REASON_FIELD = "outlier_reason"
"""The key under which readers hand out a marked run's reason (never stored in a shard)."""

Mark = dict[str, Any]


EARLIEST = "1970-01-01T00:00:00Z"
LATEST = "2100-01-01T00:00:00Z"
"""Times the gate takes (ARCHITECTURE.md, The catalog: marks): from 1970, before 2100."""
FUTURE_SLACK_S = 86400
"""How far past this clone's clock a mark may be dated (clocks disagree) before it is set
aside as dated in the future: a mark from the future would win over every later one."""


def _rank(mark: Mark) -> tuple[str, bytes]:
    return str(mark.get("at", "")), orjson.dumps(mark, option=orjson.OPT_SORT_KEYS)


def stamp_problem(at: Any) -> str | None:
    """Why a mark's `at` can never be in force (not a real UTC time from 1970 to 2099),
    or None. The same on every clone: the merge may drop such a mark."""
    import calendar
    import time

    text = str(at)
    try:
        calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ"))
    except (ValueError, OverflowError):
        return f"at: {ascii(text)[:40]} is not a real UTC time"
    if not EARLIEST <= text < LATEST:
        return f"at: {text} is before 1970 or after 2099"
    return None


def aside_reason(mark: Mark, now: float | None = None) -> str | None:
    """Why readers set a mark aside (`stamp_problem`, or dated more than a day past this
    clone's clock), or None when it is in force."""
    import calendar
    import time

    problem = stamp_problem(mark.get("at"))
    if problem is not None:
        return problem
    moment = calendar.timegm(time.strptime(str(mark["at"]), "%Y-%m-%dT%H:%M:%SZ"))
    if moment > (time.time() if now is None else now) + FUTURE_SLACK_S:
        return f"at: {mark['at']} is in the future"
    return None


def merge_marks(*sides: Iterable[Mark], now: float | None = None) -> dict[str, Mark]:
    """The winning mark of each run id across every side, among the marks in force
    (`aside_reason`): the newest (`at`), ties broken by the canonical JSON, so every clone
    and the merge driver pick the same one."""
    out: dict[str, Mark] = {}
    for side in sides:
        for mark in side:
            if aside_reason(mark, now) is not None:
                continue
            held = out.get(mark["run_id"])
            if held is None or _rank(mark) > _rank(held):
                out[mark["run_id"]] = mark
    return out


def stored_marks(*sides: Iterable[Mark], now: float | None = None) -> list[Mark]:
    """The marks a head keeps: per run the winner in force and every mark dated in the
    future (kept, not in force, so a merge stays a union of what clones hold; `validate`
    names them), sorted. A mark no clock could honour (`stamp_problem`) is dropped."""
    held = list(merge_marks(*sides, now=now).values())
    ahead = {
        orjson.dumps(m, option=orjson.OPT_SORT_KEYS): m
        for side in sides
        for m in side
        if stamp_problem(m.get("at")) is None and aside_reason(m, now) is not None
    }
    return sorted([*held, *ahead.values()], key=lambda m: (m["run_id"], *_rank(m)))


def head_marks(head: Mapping[str, Any], now: float | None = None) -> dict[str, Mark]:
    """A checked head's marks in force, the winner per run id."""
    return merge_marks(head.get(MARKS, ()), now=now)


def mark_problems(where: str, head: Mapping[str, Any], now: float | None = None) -> list[str]:
    """A checked head's marks set aside (`aside_reason`), one line each with its fix."""
    out = []
    for i, mark in enumerate(head.get(MARKS, ())):
        reason = aside_reason(mark, now)
        if reason is not None:
            out.append(
                f"{where}: $.{MARKS}[{i}] ({mark['run_id']}): {reason}; set aside (a new "
                f"`bench mark-outlier {mark['run_id']}` [--clear] replaces it)"
            )
    return out


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
