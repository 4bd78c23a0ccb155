"""The public catalog: build it from run dirs, union-merge it, validate it, keep its views.

Why a union: raw run dirs are private and gitignored, so every clone sees a different subset
of them. `catalog.json` is the shared record; a build MERGES what this clone can see into
it and never drops an entry whose run dir is absent here. Merge is keyed by run id and is
commutative, associative and idempotent: when two entries share an id, a fixed rule picks
the winner (ok over failed, then the newer timestamp, then the greater canonical JSON), so
every clone and the git merge driver agree on the same bytes.

Derived state (invariant 6) is never merged: the index, the machine summaries and
`last_updated` are recomputed from the entries every time.

Incremental builds: a private cache (`runs/.catalog-cache.json`, gitignored with the rest
of `runs/`) maps each run dir to the size and mtime of its files and its run id. A dir whose
files are unchanged and whose run id is already in the catalog is not read again, so adding
1,000 runs to 100,000 reads 1,000 dirs. `--full` ignores the cache.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from json.encoder import encode_basestring  # type: ignore[attr-defined]
from pathlib import Path
from typing import Any

from benchlab.errors import BenchlabError, SchemaError, StoreError
from benchlab.ids import check_id, slug
from benchlab.layout import (
    BATCH,
    KERNEL,
    MANIFEST,
    RECORD,
    REQUIRED_RUN_FILES,
    Store,
    atomic_write_bytes,
    atomic_write_text,
    canonical_json,
    parse_model,
    read_json,
)
from benchlab.models import HOLE_ERROR_PREFIX, HOLE_TAG
from benchlab.redact import scrub_public

log = logging.getLogger("benchlab.catalog")

CATALOG_SCHEMA = "benchmark/catalog.v1"
INVENTORY_SCHEMA = "benchmark/machine-inventory.v1"
CACHE_NAME = ".catalog-cache.json"
CACHE_VERSION = 1
RUN_FILES = (*REQUIRED_RUN_FILES, RECORD)
MERGE_DRIVER = "benchlab-catalog"
SUMMARY_STATIC = ("os", "arch", "cpu_cores", "gpu")
"""Machine summary fields that come from specs (the rest is counted from the entries)."""

Progress = Callable[[int], None]
_ISO_TIME = re.compile(
    r"(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?(Z|[+-]\d\d:?\d\d)?\Z"
)


# --- reading one run dir ------------------------------------------------------------------


def _validate(path: Path, kind: str, data: Any) -> Any:
    """Validate one run file with its pydantic model; errors name the file and JSON path."""
    from benchlab import models

    cls = {
        MANIFEST: models.RunManifest,
        KERNEL: models.KernelResults,
        BATCH: models.BatchResults,
        RECORD: models.RunRecord,
    }[kind]
    return parse_model(path, cls, data)


def _same_run(path: Path, doc: Any, run_id: str) -> None:
    if doc.run_id != run_id:
        raise SchemaError(f"{path}: $.run_id: {doc.run_id!r} differs from the run's {run_id!r}")


def extract_entry(store_root: Path, run_dir: Path, present: Iterable[str] | None = None) -> dict:
    """One run dir as a catalog entry (a plain dict, redacted through `scrub_public`).

    A dir with manifest, kernel and batch is a run; record.json is optional (absent means
    ok). A failed record with some of the required files missing is still a run: a failed
    attempt must show up, not vanish. Anything else raises StoreError naming the dir.
    """
    from benchlab import models

    names = set(present) if present is not None else {p.name for p in run_dir.iterdir()}
    docs: dict[str, Any] = {}
    for name in RUN_FILES:
        if name in names:
            path = run_dir / name
            docs[name] = _validate(path, name, read_json(path))
    record = docs.get(RECORD)
    missing = [name for name in REQUIRED_RUN_FILES if name not in docs]
    if missing and (record is None or record.status != "failed"):
        raise StoreError(f"{run_dir}: incomplete run dir, missing {', '.join(missing)}")
    manifest = docs.get(MANIFEST)
    run_id = manifest.run_id if manifest is not None else record.run_id
    for name, doc in docs.items():
        _same_run(run_dir / name, doc, run_id)
    check_id(run_id, "run id")
    spec = record.spec if record is not None else None

    entry: dict[str, Any] = {"run_id": run_id}
    if manifest is not None:
        entry.update(
            machine_id=manifest.machine_id,
            timestamp=manifest.timestamp,
            model=manifest.model.name,
            model_id=slug(manifest.model.name),
            precision=manifest.model.precision,
            backend=manifest.backend,
            mode=manifest.mode,
        )
        tags = list(manifest.tags)
    else:
        entry.update(
            machine_id=record.machine_id,
            timestamp=record.timings.started_at or record.timings.finished_at or "",
            model=spec.model if spec else "unknown",
            model_id=slug(spec.model) if spec else "unknown",
            precision=spec.precision if spec else "unknown",
            backend=spec.backend if spec else None,
            mode=spec.mode if spec else None,
        )
        tags = list(spec.tags) if spec else []
    if record is not None:
        tags.extend(record.tags)
        if (record.error or "").startswith(HOLE_ERROR_PREFIX):
            tags.append(HOLE_TAG)  # never measured: the site's fleet health counts these
        entry["status"] = record.status
        entry["failure_kind"] = record.failure_kind
    else:
        entry["status"] = "ok"
    entry["tags"] = sorted(set(tags))

    batch: models.BatchResults | None = docs.get(BATCH)
    if batch is not None:
        curve = sorted((p.batch, p.agg_tok_per_sec) for p in batch.points)
        peak = batch.peak.agg_tok_per_sec if batch.peak else None
        if peak is None and curve:
            peak = max(agg for _, agg in curve)
        baseline = batch.baseline.tok_per_sec if batch.baseline else None
        speedup = batch.peak.speedup_vs_baseline if batch.peak else None
        if speedup is None and peak is not None and baseline:
            speedup = round(peak / baseline, 2)
        entry.update(peak_tok_per_sec=peak, baseline_tok_per_sec=baseline, speedup=speedup)
        if curve:
            entry["batch_curve"] = [{"batch": b, "agg_tok_per_sec": agg} for b, agg in curve]
    kernel: models.KernelResults | None = docs.get(KERNEL)
    if kernel is not None:
        prefill = [p.tok_per_sec for p in kernel.benchmark.prefill]
        entry["prefill_tok_per_sec"] = max(prefill) if prefill else None
        decode = kernel.benchmark.decode
        entry["decode_tok_per_sec"] = decode.tok_per_sec if decode else None
    rel = run_dir.relative_to(store_root).as_posix()
    entry["path"] = rel + "/"
    entry = scrub_public({k: v for k, v in entry.items() if v is not None})
    parse_model(run_dir, models.CatalogEntry, entry)
    return entry


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


def _entry_rank(entry: dict) -> tuple[bool, tuple[int, str], str]:
    return (
        entry.get("status", "ok") == "ok",
        _time_key(entry.get("timestamp")),
        canonical_json(entry),
    )


def winner(a: dict, b: dict) -> dict:
    """The entry every clone keeps for one run id: ok over failed, then newer, then the
    greater canonical JSON. A total order, so the choice is commutative and associative."""
    if a == b:
        return a
    return a if _entry_rank(a) >= _entry_rank(b) else b


def merge_entries(*sides: Iterable[dict]) -> dict[str, dict]:
    """Union of entry lists keyed by run id, ties settled by `winner`."""
    merged: dict[str, dict] = {}
    for side in sides:
        for entry in side:
            run_id = entry["run_id"]
            held = merged.get(run_id)
            merged[run_id] = entry if held is None else winner(held, entry)
    return merged


def _merge_value(a: Any, b: Any) -> Any:
    """Field-wise union of static descriptions (machine summaries, inventory entries)."""
    if a is None or a == b:
        return b
    if b is None:
        return a
    if isinstance(a, dict) and isinstance(b, dict):
        return {k: _merge_value(a.get(k), b.get(k)) for k in sorted(a.keys() | b.keys())}
    if isinstance(a, list) and isinstance(b, list) and all(isinstance(x, str) for x in (*a, *b)):
        return sorted(set(a) | set(b))
    return max(a, b, key=canonical_json)


def _merge_static(*sides: dict[str, dict]) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for side in sides:
        for key, value in side.items():
            out[key] = _merge_value(out.get(key), value)
    return out


# --- derived state ------------------------------------------------------------------------


def _date_of(timestamp: Any) -> str:
    known, key = _time_key(timestamp)
    return key[:10] if known else str(timestamp)[:10] or "unknown"


def finalize(entries: dict[str, dict], static: dict[str, dict]) -> dict[str, Any]:
    """The catalog document: entries sorted by run id, derived state recomputed from them.

    `static` holds what specs say about each machine (os, arch, cores, gpu); the counts and
    last run come from the entries. A machine appears iff it has entries.
    """
    runs = [entries[k] for k in sorted(entries)]
    by_model: dict[str, list[str]] = {}
    by_precision: dict[str, list[str]] = {}
    by_date: dict[str, list[str]] = {}
    counts: dict[str, int] = {}
    last: dict[str, tuple[tuple[int, str], str]] = {}
    newest: tuple[tuple[int, str], str] | None = None
    for entry in runs:
        run_id = entry["run_id"]
        model_id = entry.get("model_id") or slug(entry["model"])
        by_model.setdefault(model_id, []).append(run_id)
        by_precision.setdefault(entry["precision"], []).append(run_id)
        key = _time_key(entry["timestamp"])
        date = key[1][:10] if key[0] else str(entry["timestamp"])[:10] or "unknown"
        by_date.setdefault(date, []).append(run_id)
        machine = entry["machine_id"]
        counts[machine] = counts.get(machine, 0) + 1
        stamp = (key, entry["timestamp"])
        if machine not in last or stamp > last[machine]:
            last[machine] = stamp
        if newest is None or stamp > newest:
            newest = stamp
    machines = {}
    for machine in sorted(counts):
        summary = {k: v for k, v in static.get(machine, {}).items() if k in SUMMARY_STATIC}
        summary.update(id=machine, runs=counts[machine], last_run=last[machine][1])
        machines[machine] = scrub_public({k: v for k, v in summary.items() if v is not None})
    doc: dict[str, Any] = {
        "$schema": CATALOG_SCHEMA,
        "version": "1.0",
        "machines": machines,
        "runs": runs,
        "index": {"by_model": by_model, "by_precision": by_precision, "by_date": by_date},
    }
    if newest is not None:
        doc["last_updated"] = newest[1]
    return doc


def _static_of(machines: dict[str, dict]) -> dict[str, dict]:
    return {
        m: {k: v for k, v in summary.items() if k in SUMMARY_STATIC}
        for m, summary in machines.items()
    }


def merge_catalogs(*docs: dict[str, Any]) -> dict[str, Any]:
    """The union of catalog documents (what the git merge driver writes)."""
    entries = merge_entries(*(doc.get("runs", []) for doc in docs))
    static = _merge_static(*(_static_of(doc.get("machines", {})) for doc in docs))
    return finalize(entries, static)


def merge_inventories(*docs: dict[str, Any]) -> dict[str, Any]:
    machines = _merge_static(*(doc.get("machines", {}) for doc in docs))
    return {"$schema": INVENTORY_SCHEMA, "machines": dict(sorted(machines.items()))}


# --- loading the tracked files ------------------------------------------------------------


def parse_catalog(path: Path | str, data: Any) -> dict[str, dict]:
    """Validate a catalog document; return its entries by run id. Duplicates are errors."""
    from benchlab.models import Catalog

    parse_model(path, Catalog, data)
    entries: dict[str, dict] = {}
    first_seen: dict[str, int] = {}
    for position, entry in enumerate(data.get("runs", [])):
        run_id = entry["run_id"]
        pointer = f"$.runs[{position}]"
        try:
            check_id(run_id, "run id")
            check_id(entry["machine_id"], "machine id")
        except StoreError as exc:
            raise SchemaError(f"{path}: {pointer}: {exc}") from None
        if run_id in entries:
            raise SchemaError(
                f"{path}: {pointer}.run_id: duplicate id {run_id!r} "
                f"(also at $.runs[{first_seen[run_id]}])"
            )
        entries[run_id] = entry
        first_seen[run_id] = position
    return entries


def load_catalog(
    path: Path, raw: bytes | str | None = None, *, trusted: bool = False
) -> tuple[dict[str, Any], dict[str, dict]]:
    """(document, entries by run id); an absent catalog is empty.

    `trusted` skips schema validation: only for bytes this store's last build wrote itself
    (the build cache holds their digest), which were validated when they were made.
    """
    if raw is None:
        if not path.exists():
            return {}, {}
        raw = path.read_bytes()
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise SchemaError(f"{path}: $: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise SchemaError(f"{path}: $: expected a JSON object")
    if trusted:
        return data, {entry["run_id"]: entry for entry in data.get("runs", [])}
    return data, parse_catalog(path, data)


def load_inventory(path: Path) -> dict[str, Any]:
    from benchlab.models import MachineInventory

    if not path.exists():
        return {}
    data = read_json(path)
    parse_model(path, MachineInventory, data)
    return data


# --- serialisation ------------------------------------------------------------------------
#
# Every file is `layout.canonical_json` (sorted keys, indent 2, newline). The standard
# library only has a C encoder for compact output; with an indent it falls back to pure
# Python, which takes about 10 s for a 100,000-run catalog. `dumps` below produces the same
# bytes (a property test holds it to that) with string and number leaves done in C, and
# `render_catalog` reuses the text of entries that did not change since the last build.

_RUNS_SENTINEL = "\x00benchlab-runs\x00"
_RUNS_OPEN = '\n  "runs": [\n'
_ITEM_SEPARATOR = ",\n    {\n"


def _float(value: float) -> str:
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    return float.__repr__(value)


def dumps(value: Any, indent: str = "") -> str:
    """`canonical_json(value)` without the trailing newline, at nesting `indent`."""
    if isinstance(value, str):
        return encode_basestring(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return _float(value)
    inner = indent + "  "
    if isinstance(value, dict):
        if not value:
            return "{}"
        if not all(isinstance(k, str) for k in value):
            return canonical_json(value).rstrip("\n").replace("\n", "\n" + indent)
        parts = [
            f"{inner}{encode_basestring(k)}: {dumps(v, inner)}" for k, v in sorted(value.items())
        ]
        return "{\n" + ",\n".join(parts) + "\n" + indent + "}"
    if isinstance(value, (list, tuple)):
        if not value:
            return "[]"
        if all(type(item) is str for item in value):
            body = (",\n" + inner).join(map(encode_basestring, value))
            return "[\n" + inner + body + "\n" + indent + "]"
        return (
            "[\n" + ",\n".join(inner + dumps(item, inner) for item in value) + "\n" + indent + "]"
        )
    raise TypeError(f"cannot serialise {type(value).__name__}")


def render(value: Any) -> str:
    """The canonical text of any document (what `canonical_json` returns, faster)."""
    return dumps(value) + "\n"


def _item_text(entry: dict) -> str:
    return "    " + dumps(entry, "    ")


def reusable_items(text: str, runs: list[dict]) -> dict[str, str]:
    """The text of each entry in a catalog this module wrote, by run id.

    JSON strings hold no raw newline, so a line `    {` (four spaces) can only open an
    entry of the runs list; splitting there is exact. Anything unexpected gives {}.
    """
    start = text.find(_RUNS_OPEN)
    if start < 0 or not runs:
        return {}
    start += len(_RUNS_OPEN)
    end = text.find("\n  ]", start)
    if end < 0:
        return {}
    pieces = text[start:end].split(_ITEM_SEPARATOR)
    if len(pieces) != len(runs) or not pieces[0].startswith("    {\n"):
        return {}
    items = [pieces[0]] + ["    {\n" + piece for piece in pieces[1:]]
    out = {}
    for entry, item in zip(runs, items, strict=True):
        run_id = entry["run_id"]
        if f'"run_id": {encode_basestring(run_id)}' not in item:
            return {}
        out[run_id] = item
    return out


def render_catalog(doc: dict[str, Any], reuse: dict[str, str] | None = None) -> str:
    """The canonical text of a catalog; `reuse` maps run ids to entry text known current."""
    runs = doc.get("runs", [])
    reuse = reuse or {}
    items = [reuse.get(entry["run_id"]) or _item_text(entry) for entry in runs]
    head = dict(doc)
    head["runs"] = _RUNS_SENTINEL
    text = render(head)
    marker = encode_basestring(_RUNS_SENTINEL)
    if text.count(marker) != 1:
        return render(doc)
    runs_text = "[\n" + ",\n".join(items) + "\n  ]" if items else "[]"
    return text.replace(marker, runs_text, 1)


def catalog_text(doc: dict[str, Any]) -> str:
    """The bytes written for a catalog document: exactly `layout.canonical_json(doc)`."""
    return render_catalog(doc)


def _decode(path: Path, raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SchemaError(f"{path}: $: not UTF-8 ({exc.reason} at byte {exc.start})") from None


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- specs --------------------------------------------------------------------------------


def _machine_specs(store: Store) -> dict[str, Any]:
    """Machine specs by id: this clone's private copy, else the public one from git."""
    from benchlab.models import MachineSpecs

    found: dict[str, Path] = {}
    for base in (store.machines_dir, store.by_machine):
        if not base.is_dir():
            continue
        for child in sorted(os.scandir(base), key=lambda d: d.name):
            path = Path(child.path) / "specs.json"
            if child.is_dir() and not child.name.startswith(".") and path.is_file():
                found[child.name] = path
    specs = {}
    for machine, path in sorted(found.items()):
        parsed = parse_model(path, MachineSpecs, read_json(path))
        if parsed.machine_id != machine:
            raise SchemaError(
                f"{path}: $.machine_id: {parsed.machine_id!r} differs from its dir {machine!r}"
            )
        specs[machine] = parsed
    return specs


def _gpu_label(specs: Any) -> str | None:
    gpus = [g.model for g in specs.hardware.gpu]
    if not gpus:
        return None
    if len(set(gpus)) == 1:
        return gpus[0] if len(gpus) == 1 else f"{len(gpus)}x {gpus[0]}"
    return " + ".join(gpus)


def summary_from_specs(specs: Any) -> dict[str, Any]:
    cpu = specs.hardware.cpu
    out = {
        "os": specs.os.name,
        "arch": cpu.architecture,
        "cpu_cores": cpu.cores_logical or cpu.cores_physical,
        "gpu": _gpu_label(specs),
    }
    return {k: v for k, v in out.items() if v is not None}


def inventory_from_specs(specs: Any) -> dict[str, Any]:
    cpu = specs.hardware.cpu
    out = {
        "id": specs.machine_id,
        "os": specs.os.name,
        "arch": cpu.architecture,
        "cpu_model": cpu.model,
        "cpu_cores": cpu.cores_logical or cpu.cores_physical,
        "gpu": _gpu_label(specs),
        "ram_gb": specs.hardware.ram_gb,
        "tags": sorted(set(specs.tags)),
        "registered_at": specs.registered_at,
        "cost_per_hour": specs.cost_per_hour,
    }
    return scrub_public({k: v for k, v in out.items() if v is not None})


def build_inventory(
    old: dict[str, Any], specs: dict[str, Any], entries: dict[str, dict]
) -> dict[str, Any]:
    """Inventory from specs; machines known before but without specs here are kept."""
    machines = dict(old.get("machines", {}))
    for machine, parsed in specs.items():
        machines[machine] = inventory_from_specs(parsed)
    by_machine: dict[str, list[dict]] = {}
    ok_by_point: dict[tuple[Any, str], set[str]] = {}
    for entry in entries.values():
        by_machine.setdefault(entry["machine_id"], []).append(entry)
        if entry.get("status", "ok") == "ok":
            point = (entry.get("model_id"), entry["precision"])
            ok_by_point.setdefault(point, set()).add(entry["machine_id"])
    out = {}
    for machine in sorted(machines):
        item = dict(machines[machine])
        mine = by_machine.get(machine, [])
        points = {(e.get("model_id"), e["precision"]) for e in mine if e.get("status") == "ok"}
        item["checklist"] = {
            "specs_complete": all(item.get(k) for k in ("cpu_model", "ram_gb", "os")),
            "in_catalog": bool(mine),
            "ok_run": bool(points),
            "compared": any(len(ok_by_point[p]) > 1 for p in points),
        }
        out[machine] = item
    return {"$schema": INVENTORY_SCHEMA, "machines": out}


# --- scanning -----------------------------------------------------------------------------


def iter_run_dirs(store: Store) -> Iterator[tuple[str, os.DirEntry]]:
    """(path relative to the store, dir entry) of every candidate run dir, in sorted order."""
    for base in (store.by_machine, store.public_runs):
        if not base.is_dir():
            continue
        for machine in sorted(os.scandir(base), key=lambda d: d.name):
            if machine.name.startswith(".") or not machine.is_dir():
                continue
            prefix = f"{store.runs_dir.name}/{base.name}/{machine.name}/"
            for run in sorted(os.scandir(machine.path), key=lambda d: d.name):
                if not run.name.startswith(".") and run.is_dir():
                    yield prefix + run.name, run


def _load_cache(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("version") != CACHE_VERSION:
        return {}
    if not isinstance(data.get("dirs"), dict):
        return {}
    return data


@dataclass
class BuildResult:
    """What a build did, for the one-line summary and `--format json`."""

    new: int = 0
    changed: int = 0
    kept: int = 0
    total: int = 0
    dirs_read: int = 0
    dirs_unchanged: int = 0
    views_written: int = 0
    views_removed: int = 0
    catalog_written: bool = False
    specs_published: int = 0
    warnings: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"catalog: {self.new} new, {self.changed} changed, {self.kept} kept, "
            f"{self.total} runs ({self.dirs_read} run dirs read, {self.dirs_unchanged} unchanged)"
        )


def build(store: Store, *, full: bool = False, progress: Progress | None = None) -> BuildResult:
    """Scan run dirs, union-merge them into catalog.json, write inventory and views.

    Everything is read and checked before anything is written, so bad input leaves every
    tracked file as it was. A run dir is re-read when its directory's mtime moved (every
    benchlab write is a rename into it) or its run id is missing from the catalog.
    """
    store.require()
    result = BuildResult()
    cache_path = store.runs_dir / CACHE_NAME
    cache = {} if full else _load_cache(cache_path)
    cached_dirs: dict[str, list[Any]] = cache.get("dirs", {})
    raw = store.catalog_path.read_bytes() if store.catalog_path.exists() else None
    trusted = raw is not None and cache.get("catalog") == _digest(raw)
    text = _decode(store.catalog_path, raw) if raw is not None else None
    old_doc, old_entries = load_catalog(store.catalog_path, text, trusted=trusted)
    old_inventory = load_inventory(store.inventory_path)
    specs = _machine_specs(store)

    new_cache: dict[str, list[Any]] = {}
    scanned: dict[str, dict] = {}
    for seen, (rel, run) in enumerate(iter_run_dirs(store), start=1):
        if progress is not None and seen % 1000 == 0:
            progress(seen)
        mtime = run.stat().st_mtime_ns
        cached = cached_dirs.get(rel)
        if cached is not None and cached[1] == mtime and cached[0] in old_entries:
            new_cache[rel] = cached
            result.dirs_unchanged += 1
            continue
        names = {f.name for f in os.scandir(run.path) if f.name in RUN_FILES}
        if not names:
            continue
        run_dir = Path(run.path)
        if RECORD not in names and any(name not in names for name in REQUIRED_RUN_FILES):
            result.warnings.append(f"{run_dir}: incomplete run dir skipped")
            continue
        entry = extract_entry(store.root, run_dir, names)
        result.dirs_read += 1
        held = scanned.get(entry["run_id"])
        scanned[entry["run_id"]] = entry if held is None else winner(held, entry)
        new_cache[rel] = [entry["run_id"], mtime]

    merged = dict(old_entries)
    touched: set[str] = set()
    for run_id, entry in scanned.items():
        held = old_entries.get(run_id)
        chosen = entry if held is None else winner(held, entry)
        if chosen is not held:
            merged[run_id] = chosen
            touched.add(run_id)
            if held is None:
                result.new += 1
            else:
                result.changed += 1
    result.total = len(merged)
    result.kept = result.total - result.new - result.changed

    static = _static_of(old_doc.get("machines", {}))
    for machine, parsed in specs.items():
        static[machine] = summary_from_specs(parsed)
    doc = finalize(merged, static)
    reuse = {}
    if trusted and text is not None:
        reuse = reusable_items(text, old_doc.get("runs", []))
        for run_id in touched:
            reuse.pop(run_id, None)
    data = render_catalog(doc, reuse).encode("utf-8")
    if data != raw:
        atomic_write_bytes(store.catalog_path, data)
        result.catalog_written = True
    inventory = render(build_inventory(old_inventory, specs, merged)).encode("utf-8")
    if not store.inventory_path.exists() or store.inventory_path.read_bytes() != inventory:
        atomic_write_bytes(store.inventory_path, inventory)
    result.specs_published = publish_specs(store, specs)

    if trusted and not full and store.by_model.is_dir() and store.by_date.is_dir():
        written, removed = refresh_views(store, {k: merged[k] for k in touched}, old_entries)
    else:
        written, removed = rebuild_views(store, merged, touched, rewrite_all=full)
    result.views_written, result.views_removed = written, removed
    cache_doc = {"version": CACHE_VERSION, "catalog": _digest(data), "dirs": new_cache}
    atomic_write_text(cache_path, json.dumps(cache_doc, sort_keys=True, separators=(",", ":")))
    if result.catalog_written:
        _warm_query_cache(store, doc)
    return result


def publish_specs(store: Store, specs: dict[str, Any]) -> int:
    """Redacted public copies (machines/<id>/specs.json) of the specs this clone holds.

    The hostname goes, and every value passes the redaction policy; a copy is rewritten only
    when its text changes, so builds stay quiet in git.
    """
    from benchlab.layout import dump_model
    from benchlab.models import MachineSpecs

    written = 0
    for machine, parsed in sorted(specs.items()):
        public = scrub_public(dump_model(parsed))
        public.pop("hostname", None)
        text = render(dump_model(MachineSpecs.model_validate(public)))
        target = store.public_specs(machine)
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            atomic_write_text(target, text)
            written += 1
    return written


def _warm_query_cache(store: Store, doc: dict[str, Any]) -> None:
    """Hand the new catalog to the query cache, so the first question after a build is fast."""
    from benchlab.query import prime_cache

    try:
        prime_cache(store.catalog_path, store.query_cache, doc)
    except (BenchlabError, OSError) as exc:  # an optimisation: never fail the build for it
        log.warning("query cache not warmed: %s", exc)


# --- views --------------------------------------------------------------------------------


def view_names(entry: dict) -> tuple[str, str]:
    """(by-model path, by-date path) of one entry's view files, relative to runs/."""
    run_id = check_id(entry["run_id"], "run id")
    model = check_id(entry.get("model_id") or slug(entry["model"]), "model id")
    machine = check_id(entry["machine_id"], "machine id")
    precision = check_id(slug(entry["precision"]), "precision")
    date = check_id(_date_of(entry["timestamp"]), "date")
    return (
        f"by-model/{model}/{machine}-{precision}-{run_id}.json",
        f"by-date/{date}/{run_id}.json",
    )


def _existing_views(store: Store) -> set[str]:
    found = set()
    for base in (store.by_model, store.by_date):
        if not base.is_dir():
            continue
        for group in os.scandir(base):
            if group.is_dir():
                for item in os.scandir(group.path):
                    if item.name.endswith(".json"):
                        found.add(f"{base.name}/{group.name}/{item.name}")
    return found


def _write_views(store: Store, entries: Iterable[dict]) -> int:
    """Views are derived and private (under runs/): written by rename but without fsync,
    since a crash leaves at worst a view that the next build rewrites."""
    written = 0
    made: set[Path] = set()
    for entry in entries:
        text = render(entry)
        for name in view_names(entry):
            path = store.runs_dir / name
            if path.parent not in made:
                path.parent.mkdir(parents=True, exist_ok=True)
                made.add(path.parent)
            tmp = path.with_name(f".{path.name}.tmp")
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, path)
            written += 1
    return written


def _remove_views(store: Store, names: Iterable[str]) -> int:
    removed = 0
    for name in sorted(names):
        path = store.runs_dir / name
        path.unlink(missing_ok=True)
        removed += 1
        with contextlib.suppress(OSError):
            path.parent.rmdir()  # only succeeds once the group is empty
    return removed


def refresh_views(
    store: Store, touched: dict[str, dict], before: dict[str, dict]
) -> tuple[int, int]:
    """Incremental: write the views of new or changed entries, drop their old names."""
    stale: set[str] = set()
    for run_id, entry in touched.items():
        if run_id in before:
            stale.update(set(view_names(before[run_id])) - set(view_names(entry)))
    return _write_views(store, touched.values()), _remove_views(store, stale)


def rebuild_views(
    store: Store, entries: dict[str, dict], touched: set[str], *, rewrite_all: bool = False
) -> tuple[int, int]:
    """Reconcile: every entry has its two views, nothing else is there.

    Writes the views of touched entries and any missing ones (all of them with
    `rewrite_all`); removes files no entry names.
    """
    existing = _existing_views(store)
    wanted: set[str] = set()
    to_write = []
    for run_id, entry in entries.items():
        names = view_names(entry)
        wanted.update(names)
        if rewrite_all or run_id in touched or any(n not in existing for n in names):
            to_write.append(entry)
    written = _write_views(store, to_write)
    return written, _remove_views(store, existing - wanted)


# --- validate -----------------------------------------------------------------------------


@dataclass
class ValidationReport:
    runs: int
    absent: list[str]
    warnings: list[str]


def validate(store: Store) -> ValidationReport:
    """Check catalog.json: schema, duplicate ids, index, machines, last_updated.

    Errors raise SchemaError naming the file and JSON path. Run dirs absent on this clone
    are warnings, by design: raw runs are gitignored and other clones built them.
    """
    store.require()
    path = store.catalog_path
    if not path.exists():
        raise StoreError(f"{path}: no catalog; run `bench catalog build` first")
    data, entries = load_catalog(path)
    expected = finalize(entries, _static_of(data.get("machines", {})))
    if [e["run_id"] for e in data.get("runs", [])] != sorted(entries):
        raise SchemaError(f"{path}: $.runs: not sorted by run_id; rebuild the catalog")
    index = data.get("index", {})
    for key in ("by_model", "by_precision", "by_date"):
        have, want = index.get(key, {}), expected["index"][key]
        for group in sorted(have.keys() | want.keys()):
            if sorted(have.get(group, [])) != want.get(group, []):
                raise SchemaError(
                    f"{path}: $.index.{key}.{group}: does not match the runs; "
                    "rebuild with `bench catalog build`"
                )
    machines = data.get("machines", {})
    for machine in sorted(machines.keys() | expected["machines"].keys()):
        have, want = machines.get(machine), expected["machines"].get(machine)
        if have is None or want is None:
            raise SchemaError(f"{path}: $.machines.{machine}: does not match the runs")
        if "hostname" in have:
            raise SchemaError(f"{path}: $.machines.{machine}.hostname: must not be published")
        for key in ("id", "runs", "last_run"):
            if have.get(key) != want.get(key):
                raise SchemaError(
                    f"{path}: $.machines.{machine}.{key}: {have.get(key)!r}, "
                    f"but the runs say {want.get(key)!r}"
                )
    if data.get("last_updated") != expected.get("last_updated"):
        raise SchemaError(
            f"{path}: $.last_updated: {data.get('last_updated')!r}, but the newest run is "
            f"{expected.get('last_updated')!r}"
        )
    load_inventory(store.inventory_path)
    absent = [
        e["run_id"]
        for e in entries.values()
        if e.get("path") and not (store.root / e["path"]).is_dir()
    ]
    warnings = [f"{run_id}: run dir absent on this clone" for run_id in sorted(absent)]
    return ValidationReport(runs=len(entries), absent=sorted(absent), warnings=warnings)
