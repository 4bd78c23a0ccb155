"""One run dir in the run-file format (ARCHITECTURE.md, The run files), written the way a sweep
writes it.

`write_run(store)` writes the example run (`SEED_RUN_ID`: SmolLM2-135M q8 on
anthony-laptop) as manifest.json, kernel.json and batch.json, plus a record.json whose
metrics, tests and identity come from `benchlab.metrics.derive` and
`benchlab.identity.derive`, the two derivations the runner calls. A kit run therefore reads
like a real one everywhere (catalog build, show, the exporter), and a test that needs a
different run names only what differs:

    write_run(store, machine_id="pi5", threads=2, decode=14.2)
    write_run(store, run_id, record=False)               # an import: no record.json
    write_run(store, run_id, status="failed")            # manifest and a failed record only
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from benchlab.ids import slug
from benchlab.layout import Store, atomic_write_bytes, write_model
from benchlab.metrics import derive as derive_metrics
from benchlab.models import (
    BatchResults,
    FailureKind,
    KernelResults,
    RunManifest,
    RunRecord,
    RunSpec,
    Status,
)
from benchlab.sweep.attempt import run_identity

SEED_RUN_ID = "anthony-laptop-smollm2-135m-q8-batch-a1b2c3d4-20250106T120000Z"
"""The example run of tests/data/seed002/: what `write_run` writes when told nothing else."""

SEED_PREFILL: tuple[tuple[int, float, float], ...] = ((16, 8.2, 1951.2), (64, 28.5, 2245.6))
"""Prefill points of the example run: (prompt tokens, median ms, tok/s)."""

SEED_BATCH: tuple[tuple[int, float, float, float], ...] = (
    (1, 14.16, 70.6, 1.0),
    (64, 74.23, 862.2, 12.21),
)
"""Batch curve of the example run: (batch, per-user ms/tok, aggregate tok/s, speedup)."""


def _iso_after(timestamp: str, seconds: float) -> str:
    start = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    return (start + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def write_run(
    store: Path,
    run_id: str = SEED_RUN_ID,
    *,
    machine_id: str = "anthony-laptop",
    timestamp: str = "2025-01-06T12:00:00Z",
    model: str = "SmolLM2-135M",
    model_source: str | None = "HuggingFaceTB/SmolLM2-135M",
    precision: str = "q8",
    quantization: str = "Q8_0",
    backend: str = "reference",
    mode: str = "batch",
    tags: Sequence[str] = ("kernel", "batch"),
    experiment: str | None = None,
    threads: int | None = None,
    prompt_tokens: int | None = None,
    gen_tokens: int | None = None,
    prefill: Sequence[tuple[int, float, float]] = SEED_PREFILL,
    decode: float | None = 128.2,
    decode_ms: float | None = 7.8,
    batch: Sequence[tuple[int, float, float, float]] = SEED_BATCH,
    baseline: float | None = None,
    manifest_extra: Mapping[str, Any] | None = None,
    record: bool = True,
    status: Status = "ok",
    failure_kind: FailureKind | None = None,
    error: str | None = None,
    attempt: int = 1,
    attempts: int = 1,
    warnings: Sequence[str] = (),
    duration_s: float | None = None,
    telemetry: Mapping[str, Any] | None = None,
    raw: Mapping[str, str | bytes] | None = None,
) -> Path:
    """Write one run dir under `store`'s runs/by-machine/<machine_id>/ and return it.

    An ok run gets kernel.json and batch.json; a failed one (failure_kind defaults to
    `measurement`) only its manifest and record, as the runner leaves it. `baseline`
    overrides the batch-1 rate batch.json states (the tests/data/seed002/ file disagrees with
    its own curve); `manifest_extra` adds top-level manifest fields (config, notes, provenance);
    `raw` adds files under raw/.
    """
    run_dir = Store(store).run_dir(machine_id, run_id)
    spec_id = run_id.rsplit("-", 1)[0]
    model_info = {"name": model, "precision": precision, "quantization": quantization}
    if model_source is not None:
        model_info["source"] = model_source
    manifest: dict[str, Any] = {
        "run_id": run_id,
        "machine_id": machine_id,
        "timestamp": timestamp,
        "git": {"rev": "9a0135c", "branch": "master", "dirty": False},
        "harness": {"name": "benchlab", "version": "0.1.0"},
        "model": model_info,
        "tags": list(tags),
        "backend": backend,
        "mode": mode,
    }
    if experiment is not None:
        manifest.update(experiment=experiment, spec_id=spec_id)
    manifest.update(manifest_extra or {})
    write_model(run_dir / "manifest.json", RunManifest.model_validate(manifest))

    kernel = batch_doc = None
    if status == "ok":
        benchmark: dict[str, Any] = {
            "prefill": [
                {"tokens": tokens, "median_ms": ms, "tok_per_sec": rate}
                for tokens, ms, rate in prefill
            ]
        }
        if decode is not None:
            benchmark["decode"] = {"tok_per_sec": decode}
            if decode_ms is not None:
                benchmark["decode"]["per_token_median_ms"] = decode_ms
        kernel = KernelResults.model_validate(
            {
                "run_id": run_id,
                "engine": f"{backend} {quantization}",
                "precision": quantization,
                "model": model,
                "benchmark": benchmark,
            }
        )
        batch_fields: dict[str, Any] = {
            "run_id": run_id,
            "engine": f"{backend} batched decode",
            "model": model,
            "precision": quantization,
        }
        if batch:
            first = next((p for p in batch if p[0] == 1), batch[0])
            best = max(batch, key=lambda p: p[2])
            batch_fields.update(
                baseline={"batch": 1, "tok_per_sec": first[2] if baseline is None else baseline},
                peak={"batch": best[0], "agg_tok_per_sec": best[2], "speedup_vs_baseline": best[3]},
                points=[
                    {
                        "batch": size,
                        "per_user_ms_per_tok": ms,
                        "agg_tok_per_sec": rate,
                        "speedup_vs_baseline": speedup,
                    }
                    for size, ms, rate, speedup in batch
                ],
            )
        batch_doc = BatchResults.model_validate(batch_fields)
        write_model(run_dir / "kernel.json", kernel)
        write_model(run_dir / "batch.json", batch_doc)

    if record:
        spec = RunSpec(
            spec_id=spec_id,
            experiment=experiment or "seed",
            device=machine_id,
            machine_id=machine_id,
            backend=backend,
            model=slug(model),
            precision=precision,
            mode=mode,
            threads=threads,
            prompt_tokens=prompt_tokens,
            gen_tokens=gen_tokens,
            batch_sizes=sorted(p[0] for p in batch) if status == "ok" else [],
        )
        metrics: dict[str, float] = {}
        tests: list[str] = []
        if kernel is not None:
            metrics, tests = derive_metrics(kernel, batch_doc, prompt_tokens=prompt_tokens)
        timings: dict[str, Any] = {"started_at": timestamp}
        if duration_s is not None:
            timings.update(duration_s=duration_s, finished_at=_iso_after(timestamp, duration_s))
        write_model(
            run_dir / "record.json",
            RunRecord.model_validate(
                {
                    "run_id": run_id,
                    "spec_id": spec_id,
                    "machine_id": machine_id,
                    "device": machine_id,
                    "experiment": experiment,
                    "status": status,
                    "failure_kind": failure_kind or (None if status == "ok" else "measurement"),
                    "error": error,
                    "warnings": list(warnings),
                    "attempt": attempt,
                    "attempts": attempts,
                    "timings": timings,
                    "metrics": metrics,
                    "tests": tests,
                    "identity": run_identity(spec, None),  # as the runner records it
                    "telemetry": dict(telemetry) if telemetry is not None else None,
                    "spec": spec,
                }
            ),
        )
    for name, content in (raw or {}).items():
        data = content.encode("utf-8") if isinstance(content, str) else content
        atomic_write_bytes(run_dir / "raw" / name, data)
    return run_dir
