"""The one reader of the public catalog: every query verb, chart, page and detector loads
through it.

Why not `Catalog.model_validate_json`: on a 100,000-run catalog pydantic alone takes about
a second, and `bench best` must answer in under one second, interpreter start included.
The loader parses with orjson and checks every entry against `ENTRY_FIELDS`, a flat table
of the `models.CatalogEntry` fields; a test keeps that table equal to the model, and a
property test checks that nothing this check accepts is refused by pydantic. Errors name
the file and the JSON path. This module imports neither pydantic nor the models at load
time for that reason.
"""

from __future__ import annotations

import gc
import logging
import marshal
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import orjson

from benchlab.catalog.format import DEFAULT_METRIC as DEFAULT_METRIC  # their old home:
from benchlab.catalog.format import ENTRY_FIELDS as ENTRY_FIELDS  # many callers import
from benchlab.catalog.format import FAILURE_KINDS as FAILURE_KINDS  # them from here
from benchlab.catalog.format import GATE_STATUSES, KNOWN, refuse_old
from benchlab.catalog.format import METRICS as METRICS
from benchlab.catalog.format import REQUIRED_FIELDS as REQUIRED_FIELDS
from benchlab.catalog.format import STATUSES as STATUSES
from benchlab.catalog.gate import (
    MAX_CATALOG_BYTES,
    check_head,
    extras_problem,
    line_problem,
    read_catalog,
    read_regular,
    samples_problem,
    warn,
)
from benchlab.catalog.marks import head_marks, mark_problems, present_all
from benchlab.catalog.order import (
    CONFLICT,  # the gate's spelling too
    REJECTED,
    conflict_problems,
    machine_activity,
    merge_copies,
    rejected_by_run,
    without_rejected,
)
from benchlab.catalog.shards import iter_shards, read_shard_gated, shard_dir, shard_stats
from benchlab.errors import QueryError, SchemaError, StoreError
from benchlab.identity import join_unrecorded_threads
from benchlab.layout import cache_readable, write_cache
from benchlab.metrics import declarations, learn, lift

logger = logging.getLogger(__name__)

_OPTIONAL_STR = tuple(k for k, kind in ENTRY_FIELDS.items() if kind == "str?")
_NUMBERS = tuple(k for k, kind in ENTRY_FIELDS.items() if kind in ("num", "spread"))
_INTS = tuple(k for k, kind in ENTRY_FIELDS.items() if kind == "int?")
_STR_LISTS = tuple(k for k, kind in ENTRY_FIELDS.items() if kind == "strs")
_NO_TAGS: list[str] = []


# --- loading ------------------------------------------------------------------------------


@dataclass(frozen=True)
class LoadedCatalog:
    """A checked catalog: `runs` are the entry dicts as stored, in file order."""

    path: Path
    runs: list[dict[str, Any]]
    machines: dict[str, Any] = field(default_factory=dict)
    last_updated: str | None = None
    problems: tuple[str, ...] = ()
    """Shard lines (or whole shards) the gate set aside, each named: what readers warn of."""
    declared: dict[str, Any] = field(default_factory=dict)
    """The metrics its runs declare (`metrics.declarations`; ARCHITECTURE.md, Metrics)."""

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
    key = cache_key(stat) + shards_key(path)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        loaded = _read_cache(path, cache, key) if cache is not None else None
        if loaded is None:
            loaded = _settled(_parse_catalog(path))
            if cache is not None:
                _write_cache(path, cache, key, loaded)
    finally:
        if was_enabled:
            gc.enable()
    if loaded.problems:
        warn(list(loaded.problems))

    learn(loaded.declared)  # what --metric and the directions know (ARCHITECTURE.md, Metrics)
    return loaded


def _settled(loaded: LoadedCatalog) -> LoadedCatalog:
    """What every reader sees beyond the stored lines, worked out once per change of the
    catalog and kept in the query cache with it: runs without a recorded thread count joined
    to their series (ARCHITECTURE.md, Measurement identity), and declared metrics lifted to
    fields of their own, their declarations gathered (ARCHITECTURE.md, Metrics)."""
    join_unrecorded_threads(loaded.runs)
    return replace(loaded, declared=declarations(lift(loaded.runs)))


def cache_key(stat: os.stat_result) -> tuple[Any, ...]:
    """The cached copy is valid while catalog.json keeps its size, mtime and inode."""
    return (CACHE_FORMAT, stat.st_size, stat.st_mtime_ns, stat.st_ino)


def shards_key(path: Path) -> tuple[Any, ...]:
    """A v3 catalog's entries live in shards next to it: the cache is valid while every
    shard keeps its name, size, mtime and inode too (builds and git replace files whole)."""
    if not shard_dir(path).is_dir():
        return ()
    return tuple(shard_stats(path))


def _parse_catalog(path: Path) -> LoadedCatalog:
    data, _ = read_regular(path, str(path), MAX_CATALOG_BYTES)
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise SchemaError(f"{path}: line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    return check_catalog(path, doc)


def read_head(path: Path) -> dict[str, Any]:
    """catalog.json alone, parsed: for readers that keep their own view of the entries (the
    columnar query cache, the site's light entries) and need only the head, not every
    shard that `load_catalog` reads. A v3 head passes the pulled-data gate whole (its
    machines, retracted ids and pending runs); a v1 or v2 file is refused, naming `bench
    catalog upgrade`. Any fault is one StoreError or SchemaError naming the file (and the
    field): no link followed, no FIFO waited on."""
    data = read_catalog(path)
    if data is None:
        raise StoreError(missing_catalog_message(path))
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise SchemaError(f"{path}: line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    if not isinstance(doc, dict):
        raise SchemaError(f"{path}: $: expected an object, got {_json_type(doc)}")
    _check_schema(path, doc)
    check_head(path, doc)
    return doc


def _check_schema(path: Path, doc: Any) -> None:
    """Only v3 is read: an old single-file catalog is refused in one line naming `bench
    catalog upgrade` (upgrading on every load would keep a second reader alive and hide
    the old file forever); a newer one names the benchlab to install."""
    if type(doc) is not dict:
        raise _fail(path, "$", "an object", doc)
    refuse_old(path, doc)
    schema = doc.get("$schema")
    if schema not in KNOWN:
        raise SchemaError(
            f"{path}: $.$schema: expected one of {', '.join(KNOWN)}, got {schema!r}; "
            "a newer benchlab wrote it: upgrade benchlab"
        )


CACHE_FORMAT = "benchlab-query-cache/3 python{}.{} {}".format(
    *sys.version_info[:2], ",".join(f"{k}:{v}" for k, v in ENTRY_FIELDS.items())
)
"""Part of the cache key: a new benchlab field table or Python (marshal) version misses."""

_SHARED_LISTS = ("tags", "tests", "batch_sizes")
_SHARED_STRINGS = (
    "machine_id",
    "model",
    "model_id",
    "precision",
    "precision_family",
    "status",
    "backend",
    "mode",
    "series",
    "backend_version",
    "backend_commit",
    "spec_id",
    "type_k",
    "type_v",
    "revision",
)


def _read_cache(path: Path, cache: Path, key: tuple[Any, ...]) -> LoadedCatalog | None:
    """The cached catalog, never through a link between the store and the cache (a
    committed `runs` link would hand the reader marshal data nobody checked)."""
    if not cache_readable(cache, path.parent):
        return None
    try:
        cached = marshal.loads(cache.read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if type(cached) is not tuple or len(cached) != 6 or cached[0] != key:
        return None
    _, runs, machines, last_updated, problems, declared = cached
    return LoadedCatalog(path, runs, machines, last_updated, problems, declared)


def _write_cache(path: Path, cache: Path, key: tuple[Any, ...], loaded: LoadedCatalog) -> None:
    """Keep `loaded` in marshal form. Repeated strings and lists become one object each
    (marshal then writes them once), and each batch curve stays JSON bytes until a row is
    printed in full (`full_entry`): queries never look inside curves, and decoding a
    million curve points would cost more than everything else together."""
    shared: dict[Any, Any] = {}
    runs = []
    for entry in loaded.runs:
        row = dict(entry)
        for field_name in _SHARED_STRINGS:
            value = row.get(field_name)
            if value is not None:
                row[field_name] = shared.setdefault(value, value)
        for list_name in _SHARED_LISTS:
            items = row.get(list_name)
            if items is not None:
                row[list_name] = shared.setdefault((list_name, *items), items)
        curve = row.get("batch_curve")
        if curve is not None:
            row["batch_curve"] = orjson.dumps(curve)
        runs.append(row)
    held = (loaded.machines, loaded.last_updated, loaded.problems, loaded.declared)
    try:
        blob = marshal.dumps((key, runs, *held))
    except ValueError:  # a value marshal cannot hold: only the speed is lost
        logger.debug("query cache %s not written", cache, exc_info=True)
        return
    write_cache(cache, blob, root=path.parent)  # never through a link


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
    """Check a parsed v3 catalog (the head, then every shard line), fast enough for 1M runs."""
    _check_schema(path, doc)
    return _check_v3(path, doc)


def check_entries(path: Path, runs: list[Any]) -> None:
    # One tight loop with plain type() tests: this is the hot path of every query.
    required = REQUIRED_FIELDS
    numbers = _NUMBERS
    optional = _OPTIONAL_STR
    ints = _INTS
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
        for key in ints:
            value = entry.get(key)
            if value is not None and type(value) is not int:
                raise _fail(path, f"$.runs[{i}].{key}", "an integer or null", value)
        _check_rare(path, i, entry)
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
        verdict = entry.get("gate")
        if verdict is not None and verdict not in GATE_STATUSES:
            raise SchemaError(
                f"{path}: $.runs[{i}].gate: expected one of "
                f"{', '.join(GATE_STATUSES)} or null, got {verdict!r}"
            )
        for key in _STR_LISTS:
            items = entry.get(key, _NO_TAGS)
            if type(items) is not list:
                raise _fail(path, f"$.runs[{i}].{key}", "an array of strings", items)
            for j, item in enumerate(items):
                if type(item) is not str:
                    raise _fail(path, f"$.runs[{i}].{key}[{j}]", "a string", item)
        curve = entry.get("batch_curve")
        if curve is not None:
            _check_curve(path, i, curve)
    ids = {entry["run_id"] for entry in runs}
    if len(ids) != len(runs):
        _raise_duplicate(path, runs)


_NUMBER_TYPES = (float, int)


def _check_v3(path: Path, doc: dict[str, Any]) -> LoadedCatalog:
    """A v3 catalog: the entries of every shard (plus any still inline in catalog.json),
    retracted ids dropped, sorted by run id; the machine summaries and `last_updated` are
    derived here, never stored (ARCHITECTURE.md, invariant 6).

    The head is checked whole by the gate (one error naming the field: it is one small
    file). Each shard line passes the gate too; a bad line, or a shard that is no regular
    file, is named in `problems` and set aside, and the rest still serves. A run whose
    copies measure differently (a conflict line, or copies in two shards) is left out and
    named in `problems`: no copy of it is the truth until `bench catalog validate`'s fix."""
    check_head(path, doc)
    machines = doc.get("machines", {})
    retracted = doc.get("retracted", [])
    pending = doc.get("runs", [])
    check_entries(path, pending)
    merged: dict[str, dict[str, Any]] = {}
    for entry in pending:
        merged[entry["run_id"]] = entry
    problems: list[str] = []
    for line in _head_conflicts(path, doc, problems):  # a merge with a v2 side kept them
        held = merged.get(line["run_id"])
        merged[line["run_id"]] = line if held is None else merge_copies(held, line)
    for name, shard in iter_shards(path):
        entries, bad = read_shard_gated(shard, name)
        problems += bad
        for line in entries:
            held = merged.get(line["run_id"])
            merged[line["run_id"]] = line if held is None else merge_copies(held, line)
    for run_id in retracted:
        merged.pop(run_id, None)
    for run_id, digests in rejected_by_run(doc.get(REJECTED, [])).items():
        held = merged.pop(run_id, None)  # copies `bench catalog resolve` set aside
        kept = without_rejected(held, digests) if held is not None else None
        if kept is not None:
            merged[run_id] = kept
    runs = [merged[k] for k in sorted(merged)]
    if any(CONFLICT in entry for entry in runs):
        problems += conflict_problems(runs)
        runs = [entry for entry in runs if CONFLICT not in entry]
    runs = present_all(runs, head_marks(doc))  # outlier marks (ARCHITECTURE.md, The catalog)
    problems += mark_problems(str(path), doc)
    counts, last, newest = machine_activity(runs)
    summaries = machine_summaries(machines, counts, last)
    return LoadedCatalog(path, runs, summaries, newest, tuple(problems))


def _head_conflicts(path: Path, doc: dict[str, Any], problems: list[str]) -> list[dict[str, Any]]:
    """The head's conflict lines (`conflicts`), each through the gate; one that fails is
    named in `problems` and set aside."""
    lines = doc.get("conflicts", [])
    if type(lines) is not list:
        problems.append(f"{path}: $.conflicts: expected an array of conflict lines")
        return []
    out = []
    for i, line in enumerate(lines):
        problem = line_problem(line)
        if problem is None and CONFLICT not in line:
            problem = "expected a conflict line"
        if problem is not None:
            problems.append(f"{path}: $.conflicts[{i}]: {problem}")
        else:
            out.append(line)
    return out


def machine_summaries(
    machines: dict[str, Any], counts: Mapping[str, int], last: Mapping[str, Any]
) -> dict[str, dict[str, Any]]:
    """Each machine's summary as readers see it: the head's static fields (none of them
    null) with the counts and last run computed from the entries, never stored."""
    summaries = {}
    for machine in sorted(counts):
        summary = {k: v for k, v in machines.get(machine, {}).items() if v is not None}
        summary.update(id=machine, runs=counts[machine], last_run=last[machine])
        summaries[machine] = summary
    return summaries


def _check_rare(path: Path, i: int, entry: dict[str, Any]) -> None:
    """The fields few entries carry: flash_attn, batch_sizes, axes."""
    flash = entry.get("flash_attn")
    if flash is not None and type(flash) is not bool:
        raise _fail(path, f"$.runs[{i}].flash_attn", "a boolean or null", flash)
    sizes = entry.get("batch_sizes")
    if sizes is not None and (
        type(sizes) is not list or not all(type(size) is int for size in sizes)
    ):
        raise _fail(path, f"$.runs[{i}].batch_sizes", "an array of integers or null", sizes)
    axes = entry.get("axes")
    if axes is not None and type(axes) is not dict:
        raise _fail(path, f"$.runs[{i}].axes", "an object or null", axes)
    extra = entry.get("extra_metrics")
    if extra is not None:  # declared metrics (ARCHITECTURE.md, Metrics): the gate's check
        problem = extras_problem(extra)
        if problem is not None:
            raise SchemaError(f"{path}: $.runs[{i}].extra_metrics: {problem}")
    held = entry.get("metric_samples")
    if held is not None:  # a run's samples (ARCHITECTURE.md, Compare): the gate's check
        problem = samples_problem(held)
        if problem is not None:
            raise SchemaError(f"{path}: $.runs[{i}].metric_samples: {problem}")


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


def full_entry(entry: dict[str, Any]) -> dict[str, Any]:
    """An entry with every CatalogEntry field present (null where absent), for scripts."""
    row = dict.fromkeys(ENTRY_FIELDS)
    row["tags"] = []
    row["tests"] = []
    row["status"] = "ok"
    row.update(entry)
    row["batch_curve"] = entry_curve(entry)
    return row


def entry_curve(entry: dict[str, Any]) -> list[dict[str, Any]] | None:
    """An entry's batch curve, whether loaded from JSON or kept encoded by the cache."""
    curve = entry.get("batch_curve")
    return orjson.loads(curve) if type(curve) is bytes else curve
