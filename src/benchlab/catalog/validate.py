"""`bench catalog validate`: the tracked catalog checked against its own runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from benchlab.catalog.document import load_inventory, parse_catalog, parse_shard_entries
from benchlab.catalog.gate import (
    CONFLICT,
    MAX_CATALOG_BYTES,
    MAX_SHARD_BYTES,
    check_regular,
    gate_lines,
    read_regular,
)
from benchlab.catalog.lock import catalog_lock
from benchlab.catalog.marks import mark_problems
from benchlab.catalog.read import load_catalog
from benchlab.catalog.resolve import find_conflicts, held_ids
from benchlab.catalog.shards import iter_shards, render_shard, shard_name
from benchlab.errors import SchemaError, StoreError
from benchlab.layout import (
    JOURNAL,
    Store,
    loads_json,
    recover_write_set,
)

# --- validate -----------------------------------------------------------------------------


@dataclass
class ValidationReport:
    runs: int
    absent: list[str]
    warnings: list[str]
    conflicts: list[str] = field(default_factory=list)
    """Runs whose copies measure differently, each named with its fix (the CLI exits 1)."""


def validate(store: Store) -> ValidationReport:
    """Check catalog.json: schema, duplicate ids, index, machines, last_updated.

    Errors raise SchemaError naming the file and JSON path. Run dirs absent on this clone
    are warnings, by design: raw runs are gitignored and other clones built them.
    """
    store.require()
    path = store.catalog_path
    if not path.exists():
        raise StoreError(f"{path}: no catalog; run `bench catalog build` first")

    check_regular(path, str(path))  # before anything opens it: no link, FIFO or device
    restored = _recover(store)
    report = _validate_v3(store)
    report.warnings[:0] = [
        f"{line}: put back (a write set was killed part way)" for line in restored
    ]
    return report


def _recover(store: Store) -> list[str]:
    """A write set a killed build, resolve or retract left half done (its journal) is
    rolled back first, under the catalog lock (ARCHITECTURE.md, invariant 8): mixed shards
    are never called valid."""
    if not (store.write_aside / JOURNAL).exists():
        return []
    with catalog_lock(store):
        return [str(store.relative(Path(p))) for p in recover_write_set(store.write_aside)]


BUILD_FIXES = "run `bench catalog build` (it re-files and sorts shard lines, run dirs or not)"
"""What validate says where one `bench catalog build` fixes it: an entry in another shard than
its machine and week name, a shard not sorted or not canonical."""


def _validate_v3(store: Store) -> ValidationReport:
    """A v3 catalog: catalog.json through the gate, each shard a regular file whose every
    line passes the gate, in the shard its machine and week name, sorted and canonical (as a
    build writes them). Derived state is not stored, so there is nothing else to disagree
    with the entries. All problems are found; the first is raised, the count with it."""
    path = store.catalog_path
    raw, _ = read_regular(path, str(path), MAX_CATALOG_BYTES)
    head = loads_json(raw, path)
    parse_catalog(path, head)
    problems: list[str] = mark_problems(str(path), head)
    for name, shard_path in iter_shards(path):
        problems += _shard_problems(name, shard_path)
    if problems:
        more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
        raise SchemaError(problems[0] + more)
    load_inventory(store.inventory_path)
    loaded = load_catalog(path)
    absent = sorted(
        e["run_id"] for e in loaded.runs if e.get("path") and not (store.root / e["path"]).is_dir()
    )
    warnings = [f"{run_id}: run dir absent on this clone" for run_id in absent]

    held = held_ids(path, head)
    unnamed = [m["run_id"] for m in head.get("marks", []) if m["run_id"] not in held]
    if unnamed:
        raise SchemaError(
            f"{path}: $.marks: a mark names {unnamed[0]!r}, no run of the catalog"
            + (f" (and {len(unnamed) - 1} more)" if len(unnamed) > 1 else "")
            + "; `bench catalog build` drops it"
        )
    conflicts = find_conflicts(path, head)
    return ValidationReport(len(loaded.runs), absent, warnings, conflicts)


def _shard_problems(name: str, path: Path) -> list[str]:
    """Everything wrong with one shard, each naming file, line and field, and its fix: a bad
    line or file is fixed by hand (a build refuses it rather than drop a line); a misfiled
    entry or an unsorted shard by one `bench catalog build`."""
    try:
        raw, _ = read_regular(path, name, MAX_SHARD_BYTES)
    except StoreError as exc:
        return [f"{exc}; remove it or put the shard back as a plain file"]
    entries, offsets, bad = gate_lines(raw, name)
    if bad:
        return [f"{problem}; fix or delete that line" for problem in bad]
    parse_shard_entries(name, [e for e in entries if CONFLICT not in e])
    problems = []
    for entry, offset in zip(entries, offsets, strict=True):
        target = shard_name(entry)
        if target != name:
            line = raw.count(b"\n", 0, offset) + 1
            problems.append(f"{name}:{line}: {entry['run_id']} belongs in {target}; {BUILD_FIXES}")
    if not problems and render_shard(entries) != raw:
        problems.append(f"{name}: not sorted or not canonical; {BUILD_FIXES}")
    return problems
