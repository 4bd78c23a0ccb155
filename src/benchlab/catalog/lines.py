"""Shard lines as bytes: run-id hashes, the run id and point of a line, and how a line
settles against the copies already held (the build's view of `order.settle`)."""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable
from typing import Any

import numpy as np
import orjson

from benchlab.catalog.gate import gate_lines
from benchlab.catalog.merge import (
    check_lines,
)
from benchlab.catalog.order import (
    CONFLICT,
    copies,
    measurement,
    settle,
    winner,
)
from benchlab.catalog.shards import (
    decode_entry,
    encode_line,
)
from benchlab.catalog.views import view_names


def id_hash(run_id: str) -> int:
    """A stable 64-bit hash of a run id (crc32 and adler32): where to look for an id. Every
    hit is checked against the shard's lines, so a collision only costs a read."""
    data = run_id.encode("utf-8")
    return (zlib.crc32(data) << 32) | zlib.adler32(data)


def id_hashes(ids: Iterable[str]) -> np.ndarray:
    return np.sort(np.fromiter((id_hash(i) for i in ids), dtype=np.uint64))


_ID_KEY = b'"run_id":"'


def line_id(line: bytes) -> str:
    """The run id of one canonical shard line, without parsing it where the key is unique
    (run ids are letters, digits and `._+-`: never escaped)."""
    start = line.find(_ID_KEY)
    if start >= 0 and line.find(_ID_KEY, start + 1) < 0:
        start += len(_ID_KEY)
        end = line.find(b'"', start)
        if end > 0 and b"\\" not in line[start:end]:
            return line[start:end].decode("utf-8")
    return str(orjson.loads(line)["run_id"])


def decode_line(line: bytes) -> dict[str, Any]:
    return decode_entry(orjson.loads(line))


def point_of(entry: dict[str, Any]) -> tuple[Any, Any, Any]:
    """What the inventory's checklist needs of an entry: (model, precision, status); of a
    conflict line, its first copy's."""
    if CONFLICT in entry:
        entry = copies(entry)[0]
    return (entry.get("model_id"), entry.get("precision"), entry.get("status", "ok"))


def views_of(entry: dict[str, Any]) -> list[str]:
    """The view names of a line: none for a conflict line (no copy of it is the truth)."""
    return [] if CONFLICT in entry else list(view_names(entry))


def sole_copy(here: bytes | None, elsewhere: list[bytes]) -> bool:
    """Does the catalog hold at most one copy of this run (a conflict line holds several)?"""
    lines = [*([here] if here is not None else []), *elsewhere]
    if len(lines) > 1:
        return False
    return not lines or b'"conflict":' not in lines[0] or CONFLICT not in decode_line(lines[0])


def settled_line(held: list[bytes], line: bytes, mode: str) -> bytes:
    """The line `ShardBook.place` keeps of the lines held for one run and an incoming one
    (`mode`: "again" a second dir of this clone, "alone" a fresh copy where the catalog held
    one copy, "own" a fresh copy beside a conflict, "" a pending one); a held line's own
    bytes where it is the result (the same entry, spelled differently)."""
    olds = [decode_line(h) for h in held]
    entry = decode_line(line)
    found = [copy for old in olds for copy in copies(old)]
    if mode == "again" and len(found) == 1:
        result = winner(found[0], entry)
    elif mode == "alone":
        result = entry
    elif mode == "own":
        key = measurement(entry)
        others = [copy for copy in found if measurement(copy) != key]
        result = settle([entry, *others]) if others else entry
    else:
        result = settle([*olds, entry])
    for old, raw in zip(olds, held, strict=True):
        if old == result:
            return raw
    return line if result == entry else encode_line(result)


def checked_entries(name: str, entries: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """A shard's lines validated as catalog entries (conflict lines too), by run id."""
    check_lines(name, entries)
    return {entry["run_id"]: entry for entry in entries}


def points(counts: dict[tuple[Any, Any, Any], int]) -> list[list[Any]]:
    return sorted(([m, p, s] for (m, p, s), n in counts.items() if n > 0), key=_point_key)


def _point_key(point: list[Any]) -> list[str]:
    return [str(x) for x in point]


_RUN_ID_BYTES = re.compile(rb'"run_id":"([A-Za-z0-9][A-Za-z0-9._+-]{0,199})"')

BadLine = tuple[str, int, bytes, str]
"""A pulled line this version refuses, kept as it is (ARCHITECTURE.md, Errors and exit
codes): (run id of the good line before it, or ""; its index among the bad lines; its
bytes; the run id it names, where one can be read from its bytes, else "")."""


def gated(raw: bytes, name: str) -> tuple[list[dict[str, Any]], list[BadLine], list[str]]:
    """A shard's lines through the gate, for the build: (entries that pass, the lines it
    refuses as `BadLine`s, their problems `name:LINE: field: reason`). The build keeps a
    refused line where it is rather than stop every build over another clone's line."""
    entries, offsets, problems = gate_lines(raw, name)
    if not problems:
        return entries, [], []
    good = dict(zip(offsets, entries, strict=True))
    bad: list[BadLine] = []
    after = ""
    position = 0
    for line in raw.split(b"\n"):
        start, position = position, position + len(line) + 1
        if start in good:
            after = good[start]["run_id"]
        elif line.strip():
            found = _RUN_ID_BYTES.search(line)
            bad.append((after, len(bad), line, found.group(1).decode() if found else ""))
    return entries, bad, problems


def with_bad(lines: dict[str, bytes], bad: list[BadLine]) -> bytes:
    """A shard's bytes: its lines sorted by run id, each kept bad line right after the line
    it followed (its bytes unchanged)."""
    keyed = [((run_id, 0, 0), line) for run_id, line in lines.items()]
    keyed += [((after, 1, index), line) for after, index, line, _ in bad]
    return b"".join(line + b"\n" for _, line in sorted(keyed, key=lambda item: item[0]))
