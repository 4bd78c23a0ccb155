"""Catalog v3: entries in line-per-run shards, so the tracked record stays git-friendly.

Why shards: a single catalog.json of 100,000 runs is 144 MB (GitHub refuses files over
100 MB) and every commit rewrites the whole blob. In v3, `catalog.json` keeps only what is
not derived (the machines' static fields, `retracted`, the layout) and each entry is one
line of `catalog/<machine>/<ISO week>.<machine>.jsonl` next to it: compact canonical JSON
(sorted keys), lines sorted by run id. Adding a run adds one line to one shard; a week's shard
stops changing once the week is over, so git packs old shards once.

Why ISO weeks, not months: a shard must stay well under 20 MB at a million runs. A lab of
100 machines sweeping nightly writes ~200 runs per machine per week; the synthetic fleet
(7 machines, a million runs in six months) writes ~8,000 per machine per week, about 7 MB.
Monthly shards of that fleet would be ~30 MB.

Why the machine id again at the end of the file name: git pairs a changed file with its old
version for delta compression by a hash of the path's last 16 characters, and a thin pack
(what `git push` sends) takes one base per such hash. With every machine's shard named
`2025-W26.jsonl`, a nightly commit that adds runs to seven machines' shards sent six of them
whole: 1.8 MB for 1,000 runs at a million, against ~0.2 MB once the names differ (measured
with tools/perf/catalog.py).

Everything derived (counts, `last_updated`, the index, machine run counts) is recomputed by
readers (ARCHITECTURE.md, invariant 6), so the git merge driver merges a shard as a plain union of
lines keyed by run id (`order.settle` settles a shared id) and never reconciles a count.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from datetime import date
from pathlib import Path
from typing import Any

from benchlab.catalog.format import LAYOUT as LAYOUT  # re-exported: callers import them here
from benchlab.catalog.format import SHARD_DIR as SHARD_DIR
from benchlab.catalog.format import SHARD_SUFFIX as SHARD_SUFFIX
from benchlab.catalog.format import UNDATED as UNDATED
from benchlab.catalog.format import decode_entry as decode_entry
from benchlab.catalog.format import encode_line as encode_line
from benchlab.catalog.gate import MAX_SHARD_BYTES, gate_lines, read_regular
from benchlab.catalog.order import CONFLICT, copies, merge_copies, settle, time_key
from benchlab.errors import SchemaError, StoreError
from benchlab.ids import check_id


def period_of(timestamp: Any) -> str:
    """The ISO week (`2025-W02`) of an entry's UTC timestamp; `undated` when unparsable."""
    known, key = time_key(timestamp)
    if not known:
        return UNDATED
    year, week, _ = date(int(key[0:4]), int(key[5:7]), int(key[8:10])).isocalendar()
    return f"{year}-W{week:02d}"


def shard_name(entry: dict[str, Any]) -> str:
    """The shard of one entry, relative to the store root (posix); of a conflict line, its
    first copy's (the copies of one shard's merge share the shard)."""
    entry = copies(entry)[0]
    machine = check_id(entry["machine_id"], "machine id")
    return f"{SHARD_DIR}/{machine}/{period_of(entry.get('timestamp'))}.{machine}{SHARD_SUFFIX}"


_PERIOD = re.compile(r"\d{4}-W\d\d|" + re.escape(UNDATED))


def is_layout_name(name: str) -> bool:
    """Is `name` one `shard_name` gives (catalog/<m>/<period>.<m>.jsonl)? A shard file under
    another name (an older layout, a rename by hand) has entries to move."""
    parts = name.split("/")
    if len(parts) != 3 or parts[0] != SHARD_DIR:
        return False
    machine, file = parts[1], parts[2]
    ending = f".{machine}{SHARD_SUFFIX}"
    return file.endswith(ending) and _PERIOD.fullmatch(file[: -len(ending)]) is not None


def shard_dir(catalog_path: Path) -> Path:
    return catalog_path.parent / SHARD_DIR


# --- lines --------------------------------------------------------------------------------


def parse_lines(raw: bytes, where: str) -> list[dict[str, Any]]:
    """The entries of one shard's bytes, each through `gate`; a bad line is one SchemaError
    naming file, line and field (a build or a merge refuses what a reader sets aside)."""
    entries, _, problems = gate_lines(raw, where)
    if problems:
        more = f" (and {len(problems) - 1} more bad lines)" if len(problems) > 1 else ""
        raise SchemaError(problems[0] + more)
    return entries


def render_shard(entries: Iterable[dict[str, Any]]) -> bytes:
    """A shard's bytes: one canonical line per run id (a conflict line holds every copy of
    its run), sorted by run id. No entries: empty bytes, still a file (see `ShardBook`)."""
    ordered = sorted(entries, key=lambda e: e["run_id"])
    return b"".join(encode_line(e) + b"\n" for e in ordered)


def union(*sides: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The one union of entries (shards, shard versions, catalog documents) keyed by run id:
    a shared id is settled by `order.settle`, so copies that measure differently are all kept
    in a conflict line, never decided by a rule. Commutative, associative, idempotent."""
    merged: dict[str, dict[str, Any]] = {}
    for side in sides:
        for entry in side:
            run_id = entry["run_id"]
            held = merged.get(run_id)
            merged[run_id] = entry if held is None else merge_copies(held, entry)
    for run_id, entry in merged.items():
        if CONFLICT in entry:
            merged[run_id] = settle((entry,))  # one side's conflict line, as settle writes it
    return merged


def merge_shard_bytes(
    *sides: bytes,
    where: str = "shard",
    labels: Iterable[str] | None = None,
    check: Callable[[str, list[dict[str, Any]]], None] | None = None,
) -> bytes:
    """The git merge of one shard (what the merge driver writes): the union of its versions'
    lines, canonical. `check(label, entries)` validates each side first (the driver's schema
    check); `labels` name the sides in errors (default `side 0`, `side 1`, ...)."""
    names = list(labels) if labels is not None else [f"side {i}" for i in range(len(sides))]
    entries = []
    for raw, label in zip(sides, names, strict=True):
        side = parse_lines(raw, f"{where} ({label})")
        if check is not None:
            check(f"{where} ({label})", side)
        entries.append(side)
    return render_shard(union(*entries).values())


# --- the shard tree -----------------------------------------------------------------------


def iter_shards(catalog_path: Path) -> Iterator[tuple[str, Path]]:
    """(name relative to the store, path) of every shard, sorted by name.

    `catalog/` and each machine dir must be real directories: one committed as a symbolic
    link is a StoreError, never followed (a build would write shards into its target). A
    shard file is listed whatever it is; `read_shard` refuses one that is no regular file.
    """
    base = shard_dir(catalog_path)
    if not _real_dir(base, SHARD_DIR):
        return
    for machine in sorted(os.scandir(base), key=lambda d: d.name):
        if machine.name.startswith("."):
            continue
        if not _real_dir(Path(machine.path), f"{SHARD_DIR}/{machine.name}"):
            continue
        for item in sorted(os.scandir(machine.path), key=lambda d: d.name):
            if item.name.endswith(SHARD_SUFFIX) and not item.name.startswith("."):
                yield f"{SHARD_DIR}/{machine.name}/{item.name}", Path(item.path)


def _real_dir(path: Path, name: str) -> bool:
    """Is `path` a directory that is no symbolic link? False when absent; a link or another
    kind of file is one StoreError: writing through it would put shards outside the store.
    (Here, not in `gate`: every query keys its caches on the shard tree.)"""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise StoreError(f"{name}: cannot read: {exc.strerror}") from None
    if stat.S_ISLNK(mode):
        raise StoreError(
            f"{name}: a symbolic link; the shards must be real files in the store "
            f"(remove the link: `git rm {name}`, then `bench catalog build`)"
        )
    if not stat.S_ISDIR(mode):
        raise StoreError(f"{name}: not a directory")
    return True


def shard_stats(catalog_path: Path) -> list[tuple[str, int, int, int]]:
    """(name, size, mtime_ns, inode) of every shard: what a cache of them is keyed on (the
    file's own, never a link's target)."""
    out = []
    for name, path in iter_shards(catalog_path):
        info = os.lstat(path)
        out.append((name, info.st_size, info.st_mtime_ns, info.st_ino))
    return out


def read_shard(path: Path, name: str | None = None) -> list[dict[str, Any]]:
    """A shard's entries, every line through the gate; any fault is one error (for a build,
    a merge, a retraction: they rewrite shards and must not drop a line)."""
    where = name or str(path)
    raw, _ = read_regular(path, where, MAX_SHARD_BYTES)
    return parse_lines(raw, where)


def read_shard_gated(path: Path, name: str) -> tuple[list[dict[str, Any]], list[str]]:
    """(entries that pass, problems) of one shard, for readers: a bad line, or a shard that
    is no regular file or is over the cap, is named and set aside; the rest still serves."""
    try:
        raw, _ = read_regular(path, name, MAX_SHARD_BYTES)
    except StoreError as exc:
        return [], [str(exc)]
    entries, _, problems = gate_lines(raw, name)
    return entries, problems
