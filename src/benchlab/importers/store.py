"""What every importer shares: the report, the index of runs already imported, and writing
one imported result as an ordinary run dir."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from benchlab.catalog.contract_runs import check_run
from benchlab.errors import BenchlabError, SchemaError
from benchlab.identity import derive as derive_identity
from benchlab.ids import slug
from benchlab.layout import (
    BATCH,
    KERNEL,
    MANIFEST,
    RAW_DIR,
    RECORD,
    Store,
    atomic_write_json,
    write_model,
)
from benchlab.metrics import derive as derive_metrics
from benchlab.metrics import repeat_samples
from benchlab.models import (
    BatchResults,
    KernelResults,
    RunManifest,
    RunRecord,
    Timings,
)


@dataclass
class ImportReport:
    """What an import did: run ids written, and those already in the store."""

    created: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    withheld: list[str] = field(default_factory=list)
    """`<run id>: build_commit` for each imported commit that was not a hex commit."""


class RunIndex:
    """The runs already imported, by spec id, one directory listing per machine and import:
    an asv history is thousands of runs per machine, and globbing the machine's dir for each
    of them made a re-import quadratic (20,000 runs: minutes of listing)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._by_machine: dict[str, dict[str, str]] = {}

    def find(self, machine_id: str, spec: str) -> str | None:
        """A run of this exact content already imported (any stamp): `_existing`'s answer."""
        known = self._by_machine.get(machine_id)
        if known is None:
            known = self._by_machine[machine_id] = self._list(machine_id)
        return known.get(spec)

    def add(self, machine_id: str, spec: str, run_id: str) -> None:
        self._by_machine.setdefault(machine_id, {}).setdefault(spec, run_id)

    def _list(self, machine_id: str) -> dict[str, str]:
        machine_dir = self.store.machine_dir(machine_id)
        if not machine_dir.is_dir():
            return {}
        known: dict[str, str] = {}
        for candidate in sorted(machine_dir.iterdir()):
            spec, _, stamp = candidate.name.rpartition("-")
            if spec and len(stamp) == _STAMP_CHARS and (candidate / MANIFEST).is_file():
                known.setdefault(spec, candidate.name)
        return known


_STAMP_CHARS = len("20250106T120000Z")


def existing_run(store: Store, machine_id: str, spec: str) -> str | None:
    """A run of this exact content already imported (any stamp)."""
    machine_dir = store.machine_dir(machine_id)
    if not machine_dir.is_dir():
        return None
    for candidate in sorted(machine_dir.glob(f"{spec}-*")):
        if (candidate / MANIFEST).is_file():
            return candidate.name
    return None


@dataclass
class ImportedRun:
    """One imported result, held to the writer contract, not written yet."""

    manifest: RunManifest
    kernel: KernelResults
    batch: BatchResults
    record: RunRecord
    raw: dict[str, Any]


def prepare_run(
    where: str,
    manifest: RunManifest,
    kernel: KernelResults,
    batch: BatchResults,
    raw: dict[str, Any],
    facts: dict[str, Any] | None = None,
    *,
    metrics: dict[str, float] | None = None,
) -> ImportedRun:
    """The run an import would write, refused (one SchemaError naming `where`, the input
    file, and the field) where its catalog line would be refused by every reader or counts
    something below zero (the writer contract, `catalog.contract`)."""
    from pydantic import ValidationError

    try:
        record = record_of(manifest, kernel, batch, facts or {}, metrics)
    except BenchlabError as exc:
        raise SchemaError(f"{where}: {exc}") from None
    except ValidationError as exc:  # a value no record holds (a sample mean of 1e300)
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "$"
        raise SchemaError(f"{where}: {field}: out of range ({first['msg']}); refused") from None
    check_run(where, manifest, record, kernel, batch)
    return ImportedRun(manifest, kernel, batch, record, raw)


def write_prepared(store: Store, run: ImportedRun) -> None:
    run_dir = store.run_dir(run.manifest.machine_id, run.manifest.run_id)
    root = store.root  # no link on the way (ARCHITECTURE.md, One reader and one writer path)
    atomic_write_json(run_dir / RAW_DIR / "imported.json", run.raw, root=root)
    write_model(run_dir / KERNEL, run.kernel, root=root)
    write_model(run_dir / BATCH, run.batch, root=root)
    write_model(run_dir / RECORD, run.record, root=root)
    write_model(run_dir / MANIFEST, run.manifest, root=root)  # last: a run dir counts once made


def record_of(
    manifest: RunManifest,
    kernel: KernelResults,
    batch: BatchResults,
    facts: dict[str, Any],
    given: dict[str, float] | None = None,
) -> RunRecord:
    """What a live sweep would have recorded for this result: the derived metrics, or those
    an importer read directly (`given`: an asv benchmark's time, memory or tracked value)."""
    config = manifest.config
    if given is None:
        metrics, tests = derive_metrics(kernel, batch, prompt_tokens=facts.get("prompt_tokens"))
    else:
        metrics, tests = dict(given), []
    identity = derive_identity(
        machine_id=manifest.machine_id,
        model_id=slug(manifest.model.name),
        precision=manifest.model.precision,
        backend=manifest.backend,
        mode=manifest.mode,
        params=config.get("params") if isinstance(config.get("params"), dict) else None,
        revision=manifest.git.rev if manifest.backend == "asv" else None,
        facts=facts,
    )
    # Plain dicts: RunRecord validates each into a MetricSamples (a bad one is refused with
    # its field's path, as `prepare` reports it).
    samples: dict[str, Any] | None = (
        repeat_samples(kernel, facts.get("prompt_tokens"), batch) or None
        if given is None and metrics
        else None
    )
    return RunRecord(
        run_id=manifest.run_id,
        spec_id=manifest.spec_id or manifest.run_id,
        machine_id=manifest.machine_id,
        device=manifest.machine_id,
        status="ok" if metrics else "failed",
        failure_kind=None if metrics else "parse",
        error=None if metrics else "the imported result holds no figure",
        tags=list(manifest.tags),
        timings=Timings(started_at=manifest.timestamp, finished_at=manifest.timestamp),
        metrics=dict(metrics),
        tests=tests,
        metric_samples=samples,
        identity=identity,
    )


def stamp_time(text: str | None, fallback: datetime) -> datetime:
    if text:
        try:
            return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc)
        except ValueError:
            pass
    return fallback


# --- llama-bench --------------------------------------------------------------------------
