"""`bench show`: one run from its dir, or from its catalog entry where the dir is absent."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard

from benchlab import layout
from benchlab.catalog.marks import REASON_FIELD
from benchlab.catalog.read import ENTRY_FIELDS, entry_curve, full_entry, load_catalog
from benchlab.detect.stats import is_outlier
from benchlab.errors import NoMatchError, QueryError, SchemaError, StoreError
from benchlab.identity import SERIES_NOTE
from benchlab.ids import check_id
from benchlab.layout import MANIFEST, Store
from benchlab.metrics import DECODE, EXTRA_FIELD, PEAK, RESOURCES

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


CANDIDATES_SHOWN = 3


def resolve_run_id(known: Sequence[str], asked: str, where: str) -> str:
    """The one run id of `known` that is `asked` or starts with it.

    Run ids are long (machine, model, precision, mode, hash, stamp), so any unique prefix
    is accepted wherever a run id is; an ambiguous one is a one-line error naming a few
    candidates, never a guess.
    """
    matches = sorted(k for k in known if k.startswith(asked))
    if asked in matches:
        return asked
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise NoMatchError(f"{where}: no run {asked!r} in the catalog")
    shown = ", ".join(matches[:CANDIDATES_SHOWN])
    more = len(matches) - CANDIDATES_SHOWN
    raise QueryError(
        f"run id prefix {asked!r} is ambiguous: {len(matches)} runs start with it: {shown}"
        + (f" (and {more} more)" if more > 0 else "")
    )


def _resolve_in_run_dirs(store: Any, prefix: str) -> str:
    """A run not in the catalog yet, by a unique prefix of its dir name (or unchanged)."""
    names: set[str] = set()
    for base in (store.by_machine, store.public_runs):
        if base.is_dir():
            names.update(p.name for p in base.glob(f"*/{prefix}*") if p.is_dir())
    if prefix in names or not names:
        return prefix
    return resolve_run_id(sorted(names), prefix, str(store.catalog_path))


def show_run(store_root: Path, run_id: str) -> RunDetails:
    """Find a run by id or unique id prefix: its catalog entry, then its dir (the entry's
    `path`, the private by-machine dir, the promoted public dir); read what the dir holds."""
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
        if entry is None:
            known = [e["run_id"] for e in catalog.runs]
            matches = [k for k in known if k.startswith(run_id)]
            if matches:
                run_id = resolve_run_id(known, run_id, str(store.catalog_path))
                entry = catalog.find(run_id)
    if entry is None:
        run_id = _resolve_in_run_dirs(store, run_id)
    run_dir = _find_run_dir(store, run_id, entry)
    if run_dir is None:
        if entry is not None:
            return RunDetails(
                run_id, "catalog", entry=entry, path=entry.get("path"), note=ABSENT_NOTE
            )
        if missing_catalog is not None:
            raise missing_catalog
        raise NoMatchError(f"{store.catalog_path}: no run {run_id!r} in the catalog")
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
    # lazy: pydantic; `bench best` loads this module without the models
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
        skip = ("run_id", "batch_curve", EXTRA_FIELD)  # the curve is a table of its own
        facts += [(key, entry.get(key)) for key in ENTRY_FIELDS if key not in skip]
        facts += declared_facts(entry)
        facts.append((SERIES_NOTE, entry.get(SERIES_NOTE)))
        facts += _judgement_facts(entry)[1:]  # the gate is among ENTRY_FIELDS already
        return [
            {"field": k, "value": _rounded(k, _fact(v), entry)}
            for k, v in facts
            if v not in (None, [])
        ]
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
        (DECODE.name, decode.get("tok_per_sec")),
        ("baseline_tok_per_sec", baseline.get("tok_per_sec")),
        (PEAK.name, peak.get("agg_tok_per_sec")),
        ("peak_batch", peak.get("batch")),
        ("speedup", peak.get("speedup_vs_baseline")),
        ("duration_s", (record.get("timings") or {}).get("duration_s") if record else None),
        *(_resource_facts(record) if _measured_by_agent(record) else []),
        *(_system_facts(record.get("system")) if record else []),
        *declared_facts(entry),
        (SERIES_NOTE, entry.get(SERIES_NOTE)),  # threads not recorded: which series
        *_judgement_facts(entry),
        ("path", details.path),
    ]
    return [
        {"field": k, "value": _rounded(k, _fact(v), entry)} for k, v in facts if v not in (None, [])
    ]


def _decimals(value: float, figures: int) -> int:
    """The decimals that show `figures` significant figures of `value` (none past the
    point for a large one: 2246, never 2.246e+03)."""
    if value == 0 or not math.isfinite(value):
        return 0
    return max(0, figures - 1 - math.floor(math.log10(abs(value))))


def _rounded(key: str, value: Any, entry: dict[str, Any]) -> Any:
    """A float as far as its noise supports: a rate with a measured spread to the decimals
    that show three significant figures of that spread (`decode_stddev` for
    `decode_tok_per_sec`), a spread to three significant figures, anything else to four
    (trailing zeros dropped)."""
    if not isinstance(value, float):
        return value
    spread = entry.get(f"{key.split('_')[0]}_stddev") if key.endswith("_tok_per_sec") else None
    if isinstance(spread, (int, float)) and spread > 0:
        return f"{value:.{_decimals(float(spread), 3)}f}"
    text = f"{value:.{_decimals(value, 3 if key.endswith('_stddev') else 4)}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text  # 70.6, not 70.60


def _judgement_facts(entry: dict[str, Any]) -> list[tuple[str, Any]]:
    """The catalog's verdicts on a run (ARCHITECTURE.md, The catalog: marks and verdicts):
    its gate (`gate`, with `gate_detail`), then its outlier mark and the mark's reason."""
    gate, detail = entry.get("gate"), entry.get("gate_detail")
    mark = None
    if is_outlier(entry):
        reason = entry.get(REASON_FIELD)
        mark = f"marked ({reason})" if reason else "marked"
    return [("gate", f"{gate} ({detail})" if gate and detail else gate), ("outlier", mark)]


NOT_MEASURED = "not measured"
"""What a resource reads where the device has no counter for it: never 0."""


def declared_facts(entry: dict[str, Any]) -> list[tuple[str, Any]]:
    """A run's declared metrics (ARCHITECTURE.md, Metrics), each with its unit and the
    direction its sweep declared: `p99_ms  8.00 ms (lower is better)`."""
    extra = entry.get(EXTRA_FIELD) or {}
    return [
        (name, f"{held['value']:.2f} {held['unit']} ({held['better']} is better)")
        for name, held in sorted(extra.items())
    ]


def _measured_by_agent(record: dict[str, Any] | None) -> TypeGuard[dict[str, Any]]:
    """An ok run whose agent reported the machine's state also looked for memory and
    energy counters; an older or imported record never did, and says nothing of them."""
    if not record:
        return False
    return record.get("status") == "ok" and record.get("system") is not None


def _resource_facts(record: dict[str, Any]) -> list[tuple[str, Any]]:
    """Memory, energy and stability of an ok run; absent values say "not measured"."""
    metrics = record.get("metrics") or {}
    facts: list[tuple[str, Any]] = [
        (name, metrics[name] if metrics.get(name) is not None else NOT_MEASURED)
        for name in RESOURCES
    ]
    unstable = record.get("unstable")
    labels: dict[object, str] = {True: "UNSTABLE (see warnings)", False: "stable"}
    stability = labels.get(unstable, NOT_MEASURED)
    facts.append(("stability", stability))
    return facts


def _system_facts(system: Any) -> list[tuple[str, Any]]:
    """The device's state at the start of the run, and throttling during it."""
    if not isinstance(system, dict):
        return []
    load = system.get("load")
    first = load[0] if isinstance(load, list) and load else None
    if isinstance(first, bool) or not isinstance(first, (int, float)):
        first = None  # a load average read as `nan` was recorded as null: not measured
    during = system.get("during_run") or {}
    if not isinstance(during, dict):
        during = {}
    throttled = during.get("throttled")
    boost: dict[object, str] = {True: "on", False: "off"}
    return [
        ("governor", ", ".join(system.get("governors") or []) or None),
        ("boost", boost.get(system.get("boost"))),
        (
            "load_at_start",
            f"{first:g} on {system.get('cores')} cores" if first is not None else None,
        ),
        ("swap_used_mb", system.get("swap_used_mb")),
        (
            "throttled",
            None
            if throttled is None
            else ("; ".join(during.get("reasons") or []) if throttled else "no"),
        ),
    ]


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
