"""One run dir as a catalog entry: read, check and redact what the run files say."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from benchlab.errors import SchemaError, StoreError
from benchlab.ids import check_id, slug
from benchlab.layout import (
    BATCH,
    KERNEL,
    MANIFEST,
    RECORD,
    REQUIRED_RUN_FILES,
    parse_model,
    read_json,
)
from benchlab.models import HOLE_ERROR_PREFIX, HOLE_TAG
from benchlab.redact import scrub_public

RUN_FILES = (*REQUIRED_RUN_FILES, RECORD)


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
