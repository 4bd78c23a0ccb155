"""Which copy of a run every clone keeps, when two copies of it are a conflict, and time keys.

Apart from `merge` so that the readers (query, the shard merge) use the same rule without
importing the redaction policy (and pydantic) at start-up.

Two copies of one run id that agree on the measurement (every field but `ANNOTATIONS`) are
one run: the greater canonical JSON is kept, so the merge is deterministic. Copies that
measure differently are a conflict: no rule may pick one of them, or a copy that adds a field
or moves its clock would silently replace the other clone's numbers. `settle` keeps every
such copy, in one line `{"run_id": ..., "conflict": [copy, ...]}` (copies sorted by their
measurement); readers use neither and `bench catalog validate` reports it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

import orjson

CONFLICT = "conflict"
"""The key of a line that keeps two or more copies of one run that measure differently."""
ANNOTATIONS = frozenset(
    {"tags", "warnings", "gate", "path", "series", "precision_family", "speedup"}
)
"""Fields that say something about a run without changing what it measured: marks (tags, the
warning a mark adds), a gate verdict, where its dir is, and what is derived from the other
fields (an upgrade adds these). Copies that differ only here are one run, not a conflict."""

_ISO_TIME = re.compile(
    r"(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?(Z|[+-]\d\d:?\d\d)?\Z"
)

# --- merge --------------------------------------------------------------------------------


def time_key(timestamp: Any) -> tuple[int, str]:
    """A sortable UTC key for an ISO 8601 stamp; unparsable stamps sort below every real one.

    Parsed here rather than with `datetime.fromisoformat`, whose accepted forms differ
    between Python versions: every clone must rank and date entries the same way.
    """
    if not isinstance(timestamp, str):
        return (0, "")
    match = _ISO_TIME.match(timestamp)
    if match is None:
        return (0, timestamp)
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    try:
        moment = datetime(int(year), int(month), int(day), int(hour), int(minute), int(second))
    except ValueError:
        return (0, timestamp)
    micros = (fraction or "").ljust(6, "0")[:6]
    if zone is None or zone == "Z":
        return (1, f"{year}-{month}-{day}T{hour}:{minute}:{second}.{micros}Z")
    sign = -1 if zone[0] == "+" else 1
    moment += sign * timedelta(hours=int(zone[1:3]), minutes=int(zone[-2:]))
    return (1, f"{moment:%Y-%m-%dT%H:%M:%S}.{micros}Z")


def machine_activity(
    runs: Iterable[dict[str, Any]],
) -> tuple[dict[str, int], dict[str, str], str | None]:
    """Derived from the entries alone (ARCHITECTURE.md, invariant 6): each machine's run
    count and newest run's timestamp, and the newest timestamp of all (`last_updated`), by
    the time key."""
    counts: dict[str, int] = {}
    last: dict[str, tuple[tuple[int, str], str]] = {}
    newest: tuple[tuple[int, str], str] | None = None
    for entry in runs:
        machine = entry["machine_id"]
        counts[machine] = counts.get(machine, 0) + 1
        stamp = (time_key(entry["timestamp"]), entry["timestamp"])
        if machine not in last or stamp > last[machine]:
            last[machine] = stamp
        if newest is None or stamp > newest:
            newest = stamp
    latest = {machine: stamp[1] for machine, stamp in last.items()}
    return counts, latest, newest[1] if newest is not None else None


def entry_rank(entry: dict[str, Any]) -> tuple[bool, tuple[int, str], int, str]:
    return (
        entry.get("status", "ok") == "ok",
        time_key(entry.get("timestamp")),
        len(entry),
        _canonical(entry),
    )


def winner(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Of two of this clone's own run dirs of one run (a promoted copy and the original),
    the one the build keeps: ok over failed, then newer, then the greater canonical JSON.
    Never used between clones: there a difference in measurement is a conflict (`settle`)."""
    if a == b:
        return a
    return a if entry_rank(a) >= entry_rank(b) else b


def measurement(entry: dict[str, Any]) -> bytes:
    """What a copy measured: its fields but `ANNOTATIONS`, nulls left out (a field set to
    null says no more than an absent one), as canonical bytes to compare and sort by."""
    return orjson.dumps(
        {k: v for k, v in entry.items() if k not in ANNOTATIONS and v is not None},
        option=orjson.OPT_SORT_KEYS,
    )


def copies(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """The copies one line holds: itself, or those of a conflict line."""
    held = entry.get(CONFLICT)
    return held if type(held) is list else [entry]


def settle(entries: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The one line every clone keeps for these copies of one run id (conflict lines are
    taken apart first): copies that measure the same collapse to the greater canonical
    JSON; if more than one measurement is left, a conflict line holds them all, sorted by
    measurement. A union of sets reduced per measurement by a total order, so it is
    commutative, associative and idempotent, and it never drops a measurement."""
    groups: dict[bytes, dict[str, Any]] = {}
    for entry in entries:
        for copy in copies(entry):
            key = measurement(copy)
            held = groups.get(key)
            if held is None or (held != copy and _canonical(copy) > _canonical(held)):
                groups[key] = copy
    if len(groups) == 1:
        return next(iter(groups.values()))
    kept = [groups[key] for key in sorted(groups)]
    return {"run_id": kept[0]["run_id"], CONFLICT: kept}


def merge_copies(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """`settle` of two lines of one run id (the same line comes back as it is)."""
    return a if a == b else settle((a, b))


def differences(line: dict[str, Any]) -> list[tuple[str, list[Any]]]:
    """Of a conflict line: each measured field the copies disagree on, with every copy's
    value (None where a copy lacks it), in the copies' order."""
    held = copies(line)
    fields = sorted({k for copy in held for k in copy} - ANNOTATIONS)
    out = []
    for name in fields:
        values = [copy.get(name) for copy in held]
        if any(value != values[0] for value in values[1:]):
            out.append((name, values))
    return out


def _canonical(entry: dict[str, Any]) -> str:
    """As `layout.canonical_json` (the tie-break must be byte-for-byte the same rule)."""
    return json.dumps(entry, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _shown(value: Any) -> str:
    """A value as JSON, cut to a readable length (a curve can be long)."""
    text = "absent" if value is None else json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "..."


def describe_conflict(line: dict[str, Any]) -> str:
    """One line naming a conflict: the run, how many copies, each differing field with every
    copy's value, and the command that settles it."""
    held = copies(line)
    fields = "; ".join(
        f"{name}: {' vs '.join(_shown(v) for v in values)}" for name, values in differences(line)
    )
    return (
        f"{line['run_id']}: {len(held)} copies measure differently ({fields}); keep one with "
        f"`bench catalog resolve {line['run_id']} --keep N` (N: 1 to {len(held)}, in this "
        f"order), or withdraw the run with `bench catalog retract {line['run_id']}`"
    )


def conflict_problems(lines: Iterable[dict[str, Any]]) -> list[str]:
    """What readers warn of and leave out: one line per run in conflict."""
    return [
        f"{describe_conflict(line)} (left out of every answer)"
        for line in lines
        if CONFLICT in line
    ]


REJECTED = "rejected"
"""The head's list of copies set aside by `bench catalog resolve`, as `<run id>@<digest>`
(round 0) or `<run id>@<digest>@<round>`: a union like `retracted`, so a merge never brings
a rejected copy back, while a copy no one has judged yet (another clone's third measurement)
is still a conflict. Rounds (ARCHITECTURE.md, The catalog: merge): two clones that settle one
conflict differently reject every copy between them; such a round voids itself
(`effective_rejections`) and the run is a conflict again, which a later round settles."""
MAX_REJECTED = 20_000
"""Items of a head's `rejected` (and of its `marks`) the gate lets through before anything
expands them: each is a judgement by hand, so a real head holds a few hundred."""
MAX_ROUND = 999_999
REJECTED_PATTERN = (
    r"^(?!.*\.\.)([A-Za-z0-9][A-Za-z0-9._+-]{0,199})@([0-9a-f]{16})"
    r"(?:@(0|[1-9][0-9]{0,5}))?(?![\s\S])"
)
"""An item of `rejected` (Python's `re` and ECMA 262 alike: the schema states it too)."""
_REJECTED_ITEM = re.compile(REJECTED_PATTERN)

Judgements = dict[int, set[str]]
"""One run's rejections: round -> digests of the copies rejected in it."""


def copy_digest(entry: dict[str, Any]) -> str:
    """A short name for what one copy measured (`measurement`), stable on every clone.
    (hashlib is imported here: the query path imports this module, and rarely digests.)"""
    import hashlib

    return hashlib.sha256(measurement(entry)).hexdigest()[:16]


def rejected_problem(item: Any) -> str | None:
    """What is wrong with one item of a head's `rejected`; None when it passes."""
    if type(item) is not str:
        return "expected a string <run id>@<digest>[@<round>]"
    if _REJECTED_ITEM.match(item) is None:
        shown = ascii(item) if len(item) <= 60 else ascii(item[:57]) + "..."
        return f"{shown} is not <run id>@<16 hex digits>[@<round up to {MAX_ROUND}>]"
    return None


def rejected_item(run_id: str, digest: str, round_: int) -> str:
    """One item of `rejected`: round 0 in the form older versions wrote and read."""
    return f"{run_id}@{digest}" if round_ == 0 else f"{run_id}@{digest}@{round_}"


def rejected_by_run(rejected: Iterable[Any]) -> dict[str, Judgements]:
    """The head's `rejected` list as run id -> round -> digests (items the gate would
    refuse are skipped: a reader of an ungated head never meets a traceback here)."""
    out: dict[str, Judgements] = {}
    for item in rejected:
        found = _REJECTED_ITEM.match(item) if type(item) is str else None
        if found is None:
            continue
        run_id, digest, round_ = found.groups()
        out.setdefault(run_id, {}).setdefault(int(round_ or 0), set()).add(digest)
    return out


def next_round(judged: Judgements | None) -> int:
    """The round a new resolve of a run records: past every round its head holds."""
    return max(judged) + 1 if judged else 0


def effective_rejections(judged: Judgements, present: Iterable[str]) -> set[str]:
    """The digests that stay rejected, given the digests of every copy of the run present:
    rounds in order, each adding its rejections unless, with those before it, they would
    cover every copy present (two clones' opposite choices: that round voids itself, so the
    run is a conflict again rather than absent from every answer). A function of two
    unions, so every clone and merge order agree (invariant 13)."""
    held = set(present)
    out: set[str] = set()
    for round_ in sorted(judged):
        more = out | judged[round_]
        if held and held <= more:
            continue
        out = more
    return out


def without_digests(line: dict[str, Any], digests: set[str]) -> dict[str, Any] | None:
    """A line less the copies in `digests` (`settle` of those left); None when none is left."""
    left = [copy for copy in copies(line) if copy_digest(copy) not in digests]
    if not left:
        return None
    return line if len(left) == len(copies(line)) else settle(left)


def without_rejected(line: dict[str, Any], judged: Judgements) -> dict[str, Any] | None:
    """A line holding every copy of its run, less those its judgements reject (never all
    of them: `effective_rejections`)."""
    present = {copy_digest(copy) for copy in copies(line)}
    return without_digests(line, effective_rejections(judged, present))
