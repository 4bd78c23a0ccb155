"""Ask the public catalog questions: the loader, the filters and the verbs behind
`bench list / show / compare / table / best / summary`.

Every verb is a plain function over a loaded catalog that returns rows (dicts); the CLI
picks the columns and `benchlab.render` prints them. Rows are the catalog's own entry
dicts (or small dicts built from them), so `--format json` shows exactly what the catalog
holds.

Why not `Catalog.model_validate_json`: on a 100,000-run catalog pydantic alone takes about
a second, and `bench best` must answer in under one second, interpreter start included.
The loader parses with orjson (twice as fast as `json.loads` here) and checks every entry
against `ENTRY_FIELDS`, a flat table of the `models.CatalogEntry` fields; a test keeps that
table equal to the model, and a property test checks that nothing this check accepts is
refused by pydantic. Errors name the file and the JSON path, like every other benchlab
error. This module imports neither pydantic nor the models at load time for that reason.
"""

from __future__ import annotations

import gc
import logging
import marshal
import os
import statistics
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from benchlab.errors import QueryError, SchemaError, StoreError
from benchlab.ids import slug

logger = logging.getLogger(__name__)

CATALOG_SCHEMA = "benchmark/catalog.v1"
STATUSES = ("ok", "failed")
FAILURE_KINDS = ("transport", "measurement", "config", "parse")

ENTRY_FIELDS: dict[str, str] = {
    "run_id": "str",
    "machine_id": "str",
    "timestamp": "str",
    "model": "str",
    "model_id": "str?",
    "precision": "str",
    "tags": "tags",
    "status": "status",
    "failure_kind": "failure_kind",
    "backend": "str?",
    "mode": "str?",
    "peak_tok_per_sec": "num",
    "baseline_tok_per_sec": "num",
    "speedup": "num",
    "prefill_tok_per_sec": "num",
    "decode_tok_per_sec": "num",
    "path": "str?",
    "batch_curve": "curve",
}
"""`models.CatalogEntry` as kinds: str (required), str? (optional string), num (optional
number), tags (list of strings), status, failure_kind, curve (null or a list of
{batch: int, agg_tok_per_sec: number}). tests/query keeps it equal to the model."""

REQUIRED_FIELDS = tuple(k for k, kind in ENTRY_FIELDS.items() if kind == "str")
METRICS = tuple(k for k, kind in ENTRY_FIELDS.items() if kind == "num")
"""The numeric entry fields `best --metric` and `compare` know; higher is better for each."""
DEFAULT_METRIC = "peak_tok_per_sec"
GROUPS = ("machine", "model", "precision", "date")

_OPTIONAL_STR = tuple(k for k, kind in ENTRY_FIELDS.items() if kind == "str?")
_NO_TAGS: list[str] = []


# --- loading ------------------------------------------------------------------------------


@dataclass(frozen=True)
class LoadedCatalog:
    """A checked catalog: `runs` are the entry dicts as stored, in file order."""

    path: Path
    runs: list[dict[str, Any]]
    machines: dict[str, Any] = field(default_factory=dict)
    last_updated: str | None = None

    def find(self, run_id: str) -> dict[str, Any] | None:
        for entry in self.runs:
            if entry["run_id"] == run_id:
                return entry
        return None

    def entry(self, run_id: str) -> dict[str, Any]:
        found = self.find(run_id)
        if found is not None:
            return found
        raise QueryError(f"{self.path}: no run {run_id!r} in the catalog")


def missing_catalog_message(path: Path) -> str:
    return f"{path}: file not found; run `bench catalog build` first"


def load_catalog(path: Path, cache: Path | None = None) -> LoadedCatalog:
    """Read and check `catalog.json`; any fault is one SchemaError naming file and field.

    With `cache` (the store's `query_cache`), a checked catalog is also kept there in
    marshal form and read back while catalog.json is unchanged (same size, mtime and
    inode; catalog builds replace the file by rename). Reading it back is several times
    faster than parsing the JSON (see tools/perf/query.py). The cache lives in the private,
    gitignored runs/ dir and is written only by benchlab; like a `.pyc`, marshal data is
    trusted there. A stale, damaged or unwritable cache only costs the slow path.

    The cycle collector is paused while the millions of objects of a large catalog are
    created: they hold no cycles, and collecting them repeatedly costs a third of the time.
    """
    try:
        stat = path.stat()
    except FileNotFoundError:
        raise StoreError(missing_catalog_message(path)) from None
    except OSError as exc:
        raise StoreError(f"{path}: cannot read: {exc.strerror}") from None
    key = cache_key(stat)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        if cache is not None:
            cached = _read_cache(path, cache, key)
            if cached is not None:
                return cached
        loaded = _parse_catalog(path)
        if cache is not None:
            _write_cache(cache, key, loaded)
        return loaded
    finally:
        if was_enabled:
            gc.enable()


def cache_key(stat: os.stat_result) -> tuple[Any, ...]:
    """The cached copy is valid while catalog.json keeps its size, mtime and inode."""
    return (CACHE_FORMAT, stat.st_size, stat.st_mtime_ns, stat.st_ino)


def prime_cache(path: Path, cache: Path, doc: dict[str, Any]) -> None:
    """Cache the catalog a build has just written from `doc`, without reading it back.

    `bench catalog build` calls this so that the first question after a build is as fast
    as the next ones; the entries were validated by the build, the shape is checked here.
    """
    stat = path.stat()
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        loaded = check_catalog(path, doc)
        _write_cache(cache, cache_key(stat), loaded)
    finally:
        if gc_was_enabled:
            gc.enable()


def _parse_catalog(path: Path) -> LoadedCatalog:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise StoreError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise SchemaError(f"{path}: line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    return check_catalog(path, doc)


CACHE_FORMAT = "benchlab-query-cache/1 python{}.{} {}".format(
    *sys.version_info[:2], ",".join(f"{k}:{v}" for k, v in ENTRY_FIELDS.items())
)
"""Part of the cache key: a new benchlab field table or Python (marshal) version misses."""

_SHARED_STRINGS = ("machine_id", "model", "model_id", "precision", "status", "backend", "mode")


def _read_cache(path: Path, cache: Path, key: tuple[Any, ...]) -> LoadedCatalog | None:
    try:
        cached = marshal.loads(cache.read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if type(cached) is not tuple or len(cached) != 4 or cached[0] != key:
        return None
    _, runs, machines, last_updated = cached
    return LoadedCatalog(path, runs, machines, last_updated)


def _write_cache(cache: Path, key: tuple[Any, ...], loaded: LoadedCatalog) -> None:
    """Keep `loaded` in marshal form. Repeated strings and tag lists become one object each
    (marshal then writes them once), and each batch curve stays JSON bytes until a row is
    printed in full (`full_entry`): queries never look inside curves, and decoding a
    million curve points would cost more than everything else together."""
    from benchlab.layout import atomic_write_bytes

    shared: dict[Any, Any] = {}
    runs = []
    for entry in loaded.runs:
        row = dict(entry)
        for field_name in _SHARED_STRINGS:
            value = row.get(field_name)
            if value is not None:
                row[field_name] = shared.setdefault(value, value)
        tags = row.get("tags")
        if tags is not None:
            row["tags"] = shared.setdefault(("tags", *tags), tags)
        curve = row.get("batch_curve")
        if curve is not None:
            row["batch_curve"] = orjson.dumps(curve)
        runs.append(row)
    try:
        blob = marshal.dumps((key, runs, loaded.machines, loaded.last_updated))
        atomic_write_bytes(cache, blob)
    except (OSError, ValueError):
        logger.debug("query cache %s not written", cache, exc_info=True)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _fail(path: Path, pointer: str, expected: str, value: Any) -> SchemaError:
    return SchemaError(f"{path}: {pointer}: expected {expected}, got {_json_type(value)}")


def check_catalog(path: Path, doc: Any) -> LoadedCatalog:
    """Check a parsed catalog the way `models.Catalog` would, fast enough for 100k runs."""
    if type(doc) is not dict:
        raise _fail(path, "$", "an object", doc)
    schema = doc.get("$schema", CATALOG_SCHEMA)
    if schema != CATALOG_SCHEMA:
        raise SchemaError(f"{path}: $.$schema: expected {CATALOG_SCHEMA!r}, got {schema!r}")
    for key in ("version", "last_updated"):
        value = doc.get(key)
        if value is not None and type(value) is not str:
            raise _fail(path, f"$.{key}", "a string", value)
    machines = doc.get("machines", {})
    if type(machines) is not dict:
        raise _fail(path, "$.machines", "an object", machines)
    for machine_id, summary in machines.items():
        if type(summary) is not dict:
            raise _fail(path, f"$.machines.{machine_id}", "an object", summary)
        if type(summary.get("id")) is not str:
            raise _fail(path, f"$.machines.{machine_id}.id", "a string", summary.get("id"))
    index = doc.get("index", {})
    if type(index) is not dict:
        raise _fail(path, "$.index", "an object", index)
    runs = doc.get("runs", [])
    if type(runs) is not list:
        raise _fail(path, "$.runs", "an array", runs)
    _check_entries(path, runs)
    return LoadedCatalog(path, runs, machines, doc.get("last_updated"))


def _check_entries(path: Path, runs: list[Any]) -> None:
    # One tight loop with plain type() tests: this is the hot path of every query.
    required = REQUIRED_FIELDS
    numbers = METRICS
    optional = _OPTIONAL_STR
    for i, entry in enumerate(runs):
        if type(entry) is not dict:
            raise _fail(path, f"$.runs[{i}]", "an object", entry)
        for key in required:
            if type(entry.get(key)) is not str:
                if key not in entry:
                    raise SchemaError(f"{path}: $.runs[{i}].{key}: field required")
                raise _fail(path, f"$.runs[{i}].{key}", "a string", entry[key])
        for key in numbers:
            value = entry.get(key)
            if value is not None and type(value) is not float and type(value) is not int:
                raise _fail(path, f"$.runs[{i}].{key}", "a number or null", value)
        for key in optional:
            value = entry.get(key)
            if value is not None and type(value) is not str:
                raise _fail(path, f"$.runs[{i}].{key}", "a string or null", value)
        status = entry.get("status", "ok")
        if status not in STATUSES:
            raise SchemaError(
                f"{path}: $.runs[{i}].status: expected 'ok' or 'failed', got {status!r}"
            )
        kind = entry.get("failure_kind")
        if kind is not None and kind not in FAILURE_KINDS:
            raise SchemaError(
                f"{path}: $.runs[{i}].failure_kind: expected one of "
                f"{', '.join(FAILURE_KINDS)} or null, got {kind!r}"
            )
        tags = entry.get("tags", _NO_TAGS)
        if type(tags) is not list:
            raise _fail(path, f"$.runs[{i}].tags", "an array of strings", tags)
        for j, tag in enumerate(tags):
            if type(tag) is not str:
                raise _fail(path, f"$.runs[{i}].tags[{j}]", "a string", tag)
        curve = entry.get("batch_curve")
        if curve is not None:
            _check_curve(path, i, curve)
    ids = {entry["run_id"] for entry in runs}
    if len(ids) != len(runs):
        _raise_duplicate(path, runs)


_NUMBER_TYPES = (float, int)


def _check_curve(path: Path, i: int, curve: Any) -> None:
    if type(curve) is list and all(
        type(point) is dict
        and type(point.get("batch")) is int
        and type(point.get("agg_tok_per_sec")) in _NUMBER_TYPES
        for point in curve
    ):
        return  # the common case, in one pass; the loop below finds and names a fault
    if type(curve) is not list:
        raise _fail(path, f"$.runs[{i}].batch_curve", "an array or null", curve)
    for j, point in enumerate(curve):
        where = f"$.runs[{i}].batch_curve[{j}]"
        if type(point) is not dict:
            raise _fail(path, where, "an object", point)
        if type(point.get("batch")) is not int:
            raise _fail(path, f"{where}.batch", "an integer", point.get("batch"))
        value = point.get("agg_tok_per_sec")
        if type(value) is not float and type(value) is not int:
            raise _fail(path, f"{where}.agg_tok_per_sec", "a number", value)


def _raise_duplicate(path: Path, runs: list[dict[str, Any]]) -> None:
    first: dict[str, int] = {}
    for i, entry in enumerate(runs):
        run_id = entry["run_id"]
        if run_id in first:
            raise SchemaError(
                f"{path}: $.runs[{i}].run_id: duplicate id {run_id!r} "
                f"(also at $.runs[{first[run_id]}])"
            )
        first[run_id] = i


# --- filters ------------------------------------------------------------------------------


def parse_date(text: str, flag: str) -> str:
    """A `--since/--until` value as YYYY-MM-DD; anything else is a one-line QueryError."""
    try:
        if len(text) == 10:
            return datetime.strptime(text, "%Y-%m-%d").strftime("%Y-%m-%d")
    except ValueError:
        pass
    raise QueryError(f"{flag}: expected a date YYYY-MM-DD, got {text!r}")


def check_metric(metric: str) -> str:
    if metric not in METRICS:
        raise QueryError(f"--metric: unknown metric {metric!r}; valid: {', '.join(METRICS)}")
    return metric


@dataclass(frozen=True)
class Filters:
    """What `--model --machine --precision --since --until --tag --status` ask for.

    model matches an entry's slug `model_id` or the slug of its display name, so
    `SmolLM2-135M` and `smollm2-135m` both find the same runs; machine and precision
    match case-insensitively; dates are inclusive; every tag given must be present;
    status None means any status.
    """

    model: str | None = None
    machine: str | None = None
    precision: str | None = None
    since: str | None = None
    until: str | None = None
    tags: tuple[str, ...] = ()
    status: str | None = None

    def describe(self) -> str:
        """The filters as the flags that set them, for 'no runs match ...' messages."""
        parts = [
            f"--{name} {value}"
            for name, value in (
                ("model", self.model),
                ("machine", self.machine),
                ("precision", self.precision),
                ("since", self.since),
                ("until", self.until),
                ("status", self.status),
            )
            if value
        ]
        parts += [f"--tag {tag}" for tag in self.tags]
        return " ".join(parts)


def model_key(entry: dict[str, Any]) -> str:
    """The slug a run's model is known by: its `model_id`, else the slug of its name."""
    model_id = entry.get("model_id")
    if model_id:
        return model_id.lower()
    return slug(entry["model"])


def select(runs: Iterable[dict[str, Any]], filters: Filters) -> list[dict[str, Any]]:
    """The entries that pass every filter, in the order given.

    One list comprehension per filter, the most selective (model) first: on 100,000 runs
    this is several times faster than testing a list of predicates per entry.
    """
    rows = list(runs)
    if filters.model is not None:
        wanted = slug(filters.model)
        names = {e["model"] for e in rows}
        matching_names = {name for name in names if slug(name) == wanted}
        rows = [
            e
            for e in rows
            if e["model"] in matching_names
            or ((model_id := e.get("model_id")) is not None and model_id.lower() == wanted)
        ]
    if filters.machine is not None:
        machine = filters.machine.lower()
        rows = [e for e in rows if e["machine_id"].lower() == machine]
    if filters.precision is not None:
        precision = filters.precision.lower()
        rows = [e for e in rows if e["precision"].lower() == precision]
    if filters.since is not None:
        since = filters.since
        rows = [e for e in rows if e["timestamp"][:10] >= since]
    if filters.until is not None:
        until = filters.until
        rows = [e for e in rows if e["timestamp"][:10] <= until]
    if filters.tags:
        wanted_tags = set(filters.tags)
        rows = [e for e in rows if wanted_tags.issubset(e.get("tags", ()))]
    if filters.status is not None:
        status = filters.status
        rows = [e for e in rows if e.get("status", "ok") == status]
    return rows


def chronological(entries: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(entries, key=lambda e: (e["timestamp"], e["run_id"]))


def ranked(entries: Iterable[dict[str, Any]], metric: str) -> list[dict[str, Any]]:
    """Highest `metric` first; ties go to the newer run, then the smaller run id.

    Entries without a value for the metric come last.
    """
    rows = sorted(entries, key=lambda e: e["run_id"])
    rows.sort(key=lambda e: e["timestamp"], reverse=True)
    rows.sort(key=lambda e: (e.get(metric) is not None, e.get(metric) or 0.0), reverse=True)
    return rows


# --- the verbs ----------------------------------------------------------------------------


def list_runs(
    catalog: LoadedCatalog, filters: Filters, limit: int | None = None
) -> list[dict[str, Any]]:
    """`bench list`: matching entries sorted by timestamp then run id, the first `limit`."""
    rows = chronological(select(catalog.runs, filters))
    return rows if limit is None else rows[: max(limit, 0)]


def best_runs(
    catalog: LoadedCatalog,
    filters: Filters,
    metric: str = DEFAULT_METRIC,
    by: str | None = None,
) -> list[dict[str, Any]]:
    """`bench best`: the run with the highest `metric`, or the best per machine (`by`).

    Ties go to the newer run, then the smaller run id (as `ranked`).
    """
    check_metric(metric)
    if by not in (None, "machine"):
        raise QueryError(f"--by: expected 'machine', got {by!r}")
    candidates = [e for e in select(catalog.runs, filters) if e.get(metric) is not None]
    if by is None:
        if not candidates:
            return []
        top = max(e[metric] for e in candidates)
        return ranked([e for e in candidates if e[metric] == top], metric)[:1]
    return _first_per(ranked(candidates, metric), "machine_id")


def _first_per(rows: Sequence[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    seen: set[str] = set()
    kept = []
    for row in rows:
        if row[key] not in seen:
            seen.add(row[key])
            kept.append(row)
    return kept


def machine_table(catalog: LoadedCatalog, filters: Filters) -> list[dict[str, Any]]:
    """`bench table`: one row per machine, its best run by peak tok/s, fastest first."""
    return _first_per(ranked(select(catalog.runs, filters), DEFAULT_METRIC), "machine_id")


@dataclass(frozen=True)
class Comparison:
    """`bench compare`: the runs in the order asked, and per metric their values and the
    ratio of each to the first run (None where either value is missing or the first is 0)."""

    runs: list[dict[str, Any]]
    metrics: list[dict[str, Any]]


def compare_runs(catalog: LoadedCatalog, run_ids: Sequence[str]) -> Comparison:
    if len(run_ids) < 2:
        raise QueryError("compare: give at least two --run-id")
    wanted = set(run_ids)
    found = {e["run_id"]: e for e in catalog.runs if e["run_id"] in wanted}
    for run_id in run_ids:
        if run_id not in found:
            raise QueryError(f"{catalog.path}: no run {run_id!r} in the catalog")
    runs = [found[run_id] for run_id in run_ids]
    metrics = []
    for metric in METRICS:
        values = [run.get(metric) for run in runs]
        first = values[0]
        ratios = [
            None if value is None or not first else value / first
            for value in values  # the first run's own ratio is 1.0 (or None)
        ]
        metrics.append({"metric": metric, "values": values, "ratios": ratios})
    return Comparison(runs, metrics)


def _group_key(group_by: str) -> Callable[[dict[str, Any]], str]:
    if group_by == "machine":
        return lambda e: e["machine_id"]
    if group_by == "model":
        return model_key
    if group_by == "precision":
        return lambda e: e["precision"]
    if group_by == "date":
        return lambda e: e["timestamp"][:10]
    raise QueryError(f"--group-by: expected one of {', '.join(GROUPS)}, got {group_by!r}")


def summarize(catalog: LoadedCatalog, filters: Filters, group_by: str) -> list[dict[str, Any]]:
    """`bench summary`: per group the run count, ok and failed counts, median and max peak
    tok/s over ok runs, and the newest run's timestamp; groups sorted by key."""
    key = _group_key(group_by)
    groups: dict[str, list[dict[str, Any]]] = {}
    for entry in select(catalog.runs, filters):
        groups.setdefault(key(entry), []).append(entry)
    rows = []
    for name in sorted(groups):
        entries = groups[name]
        ok = [e for e in entries if e.get("status", "ok") == "ok"]
        peaks = [e["peak_tok_per_sec"] for e in ok if e.get("peak_tok_per_sec") is not None]
        rows.append(
            {
                group_by: name,
                "count": len(entries),
                "ok": len(ok),
                "failed": len(entries) - len(ok),
                "median_peak_tok_per_sec": statistics.median(peaks) if peaks else None,
                "max_peak_tok_per_sec": max(peaks) if peaks else None,
                "last_run": max(e["timestamp"] for e in entries),
            }
        )
    return rows


def full_entry(entry: dict[str, Any]) -> dict[str, Any]:
    """An entry with every CatalogEntry field present (null where absent), for scripts."""
    row = dict.fromkeys(ENTRY_FIELDS)
    row["tags"] = []
    row["status"] = "ok"
    row.update(entry)
    row["batch_curve"] = entry_curve(entry)
    return row


def entry_curve(entry: dict[str, Any]) -> list[dict[str, Any]] | None:
    """An entry's batch curve, whether loaded from JSON or kept encoded by the cache."""
    curve = entry.get("batch_curve")
    return orjson.loads(curve) if type(curve) is bytes else curve


# --- show ---------------------------------------------------------------------------------

ABSENT_NOTE = "run dir absent on this clone; showing the catalog entry"
UNCATALOGUED_NOTE = "run not in the catalog yet (run `bench catalog build`); showing its run dir"


@dataclass(frozen=True)
class RunDetails:
    """`bench show`: a run from its dir (source "run_dir") or, where the dir is absent on
    this clone, from its catalog entry alone (source "catalog", with `note` saying so)."""

    run_id: str
    source: str
    entry: dict[str, Any] | None = None
    path: str | None = None
    documents: dict[str, dict[str, Any]] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    note: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "source": self.source,
            "path": self.path,
            "note": self.note,
            "missing": self.missing,
            "entry": full_entry(self.entry) if self.entry is not None else None,
            **{name: self.documents.get(name) for name in ("manifest", "kernel", "batch")},
            "record": self.documents.get("record"),
        }


def show_run(store_root: Path, run_id: str) -> RunDetails:
    """Find a run by id: its catalog entry, then its dir (the entry's `path`, the private
    by-machine dir, the promoted public dir); read what the dir holds."""
    from benchlab.ids import check_id
    from benchlab.layout import Store

    store = Store(store_root)
    check_id(run_id, "run id")
    entry = None
    missing_catalog: StoreError | None = None
    try:
        catalog = load_catalog(store.catalog_path, cache=store.query_cache)
    except SchemaError:
        raise
    except StoreError as exc:
        missing_catalog = exc
    else:
        entry = catalog.find(run_id)
    run_dir = _find_run_dir(store, run_id, entry)
    if run_dir is None:
        if entry is not None:
            return RunDetails(
                run_id, "catalog", entry=entry, path=entry.get("path"), note=ABSENT_NOTE
            )
        if missing_catalog is not None:
            raise missing_catalog
        raise QueryError(f"{store.catalog_path}: no run {run_id!r} in the catalog")
    documents, missing = _read_run_dir(run_dir)
    notes = []
    if entry is None:
        notes.append(UNCATALOGUED_NOTE)
    if missing:
        notes.append(f"run dir lacks {', '.join(missing)}")
    return RunDetails(
        run_id,
        "run_dir",
        entry=entry,
        path=store.relative(run_dir),
        documents=documents,
        missing=missing,
        note="; ".join(notes) or None,
    )


def _find_run_dir(store: Any, run_id: str, entry: dict[str, Any] | None) -> Path | None:
    from benchlab.layout import MANIFEST

    root = store.root.resolve()
    candidates: list[Path] = []
    if entry is not None:
        if entry.get("path"):
            candidates.append(store.root / entry["path"])
        candidates.append(store.run_dir(entry["machine_id"], run_id))
        candidates.append(store.public_run_dir(entry["machine_id"], run_id))
    else:
        for base in (store.by_machine, store.public_runs):
            if base.is_dir():
                candidates.extend(sorted(base.glob(f"*/{run_id}")))
    for candidate in candidates:
        resolved = candidate.resolve()
        if resolved != root and root not in resolved.parents:
            continue  # a catalog path that points out of the store is never followed
        if (resolved / MANIFEST).is_file():
            return candidate
    return None


def _read_run_dir(run_dir: Path) -> tuple[dict[str, dict[str, Any]], list[str]]:
    from benchlab import layout
    from benchlab.models import BatchResults, KernelResults, RunManifest, RunRecord

    files = (
        ("manifest", layout.MANIFEST, RunManifest, True),
        ("kernel", layout.KERNEL, KernelResults, True),
        ("batch", layout.BATCH, BatchResults, True),
        ("record", layout.RECORD, RunRecord, False),
    )
    documents: dict[str, dict[str, Any]] = {}
    missing: list[str] = []
    for name, file_name, model, required in files:
        path = run_dir / file_name
        if not path.is_file():
            if required:
                missing.append(file_name)
            continue
        documents[name] = layout.dump_model(layout.read_model(path, model))
    return documents, missing


def run_facts(details: RunDetails) -> list[dict[str, Any]]:
    """The key facts of a run as (field, value) rows, for the text formats of `show`."""
    entry = details.entry or {}
    docs = details.documents
    manifest = docs.get("manifest", {})
    kernel = docs.get("kernel", {})
    batch = docs.get("batch", {})
    record = docs.get("record")
    model = manifest.get("model", {})
    facts: list[tuple[str, Any]] = [("run_id", details.run_id), ("source", details.source)]
    if details.source == "catalog":
        skip = ("run_id", "batch_curve")  # the curve is a table of its own
        facts += [(key, entry.get(key)) for key in ENTRY_FIELDS if key not in skip]
        return [{"field": k, "value": _fact(v)} for k, v in facts if v not in (None, [])]
    status = record["status"] if record else entry.get("status", "ok")
    decode = kernel.get("benchmark", {}).get("decode") or {}
    baseline = batch.get("baseline") or {}
    peak = batch.get("peak") or {}
    git = manifest.get("git", {})
    harness = manifest.get("harness", {})
    facts += [
        ("machine_id", manifest.get("machine_id")),
        ("timestamp", manifest.get("timestamp")),
        ("status", status if record else f"{status} (no record.json)"),
        ("failure_kind", record.get("failure_kind") if record else None),
        ("error", record.get("error") if record else None),
        ("warnings", record.get("warnings") if record else None),
        ("attempt", f"{record['attempt']} of {record['attempts']}" if record else None),
        ("model", model.get("name")),
        ("model_source", model.get("source")),
        ("precision", model.get("precision")),
        ("quantization", model.get("quantization")),
        ("backend", manifest.get("backend")),
        ("mode", manifest.get("mode")),
        ("experiment", manifest.get("experiment")),
        ("tags", manifest.get("tags")),
        ("git", " ".join(str(v) for v in (git.get("rev"), git.get("branch")) if v) or None),
        ("harness", " ".join(str(v) for v in harness.values() if v) or None),
        ("engine", kernel.get("engine")),
        ("decode_tok_per_sec", decode.get("tok_per_sec")),
        ("baseline_tok_per_sec", baseline.get("tok_per_sec")),
        ("peak_tok_per_sec", peak.get("agg_tok_per_sec")),
        ("peak_batch", peak.get("batch")),
        ("speedup", peak.get("speedup_vs_baseline")),
        ("duration_s", (record.get("timings") or {}).get("duration_s") if record else None),
        ("path", details.path),
    ]
    return [{"field": k, "value": _fact(v)} for k, v in facts if v not in (None, [])]


def _fact(value: Any) -> Any:
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return value


def batch_curve(details: RunDetails) -> list[dict[str, Any]]:
    """The run's batch curve: batch.json's points, else the catalog entry's compact curve."""
    if details.source == "catalog" and details.entry is not None:
        return list(entry_curve(details.entry) or [])
    return list((details.documents.get("batch") or {}).get("points", []))


def prefill_points(details: RunDetails) -> list[dict[str, Any]]:
    kernel = details.documents.get("kernel") or {}
    return list(kernel.get("benchmark", {}).get("prefill", []))
