"""The fixed order of entries: which copy of a run every clone keeps, and time keys.

Apart from `merge` so that the readers (query, the shard merge) use the same rule without
importing the redaction policy (and pydantic) at start-up.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

_ISO_TIME = re.compile(
    r"(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?(Z|[+-]\d\d:?\d\d)?\Z"
)

# --- merge --------------------------------------------------------------------------------


def _time_key(timestamp: Any) -> tuple[int, str]:
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
    """Derived from the entries alone (invariant 6): each machine's run count and newest
    run's timestamp, and the newest timestamp of all (`last_updated`), by the time key."""
    counts: dict[str, int] = {}
    last: dict[str, tuple[tuple[int, str], str]] = {}
    newest: tuple[tuple[int, str], str] | None = None
    for entry in runs:
        machine = entry["machine_id"]
        counts[machine] = counts.get(machine, 0) + 1
        stamp = (_time_key(entry["timestamp"]), entry["timestamp"])
        if machine not in last or stamp > last[machine]:
            last[machine] = stamp
        if newest is None or stamp > newest:
            newest = stamp
    latest = {machine: stamp[1] for machine, stamp in last.items()}
    return counts, latest, newest[1] if newest is not None else None


def _entry_rank(entry: dict) -> tuple[bool, tuple[int, str], int, str]:
    return (
        entry.get("status", "ok") == "ok",
        _time_key(entry.get("timestamp")),
        len(entry),
        _canonical(entry),
    )


def winner(a: dict, b: dict) -> dict:
    """The entry every clone keeps for one run id: ok over failed, then newer, then the
    greater canonical JSON. A total order, so the choice is commutative and associative."""
    if a == b:
        return a
    return a if _entry_rank(a) >= _entry_rank(b) else b


def _canonical(entry: dict) -> str:
    """As `layout.canonical_json` (the tie-break must be byte-for-byte the same rule)."""
    return json.dumps(entry, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
