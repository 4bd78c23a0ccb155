"""The writer contract for a run about to be written (`catalog.contract`, ARCHITECTURE.md,
The catalog): the line the build would extract from its files, held to the readers' gate.
Apart from `contract` because it reads the extraction, which the sweep config (a user of
`contract`) must not import in a circle."""

from __future__ import annotations

from benchlab import models
from benchlab.catalog.contract import counts_problem, written_problem
from benchlab.catalog.extract import entry_from_docs
from benchlab.errors import BenchlabError, SchemaError
from benchlab.identity import series_id


def run_problem(
    manifest: models.RunManifest | None,
    record: models.RunRecord,
    kernel: models.KernelResults | None,
    batch: models.BatchResults | None,
) -> str | None:
    """What every reader would say of the catalog line of a run about to be written: the
    entry the build extracts from these files (before redaction, which only withholds),
    through the line gate."""
    try:
        entry = entry_from_docs(record.run_id, manifest, record, kernel, batch, "record.json")
    except BenchlabError as exc:  # the extraction itself refuses: that is the problem
        return f"$: {exc}"
    entry["path"] = f"runs/by-machine/{record.machine_id}/{record.run_id}/"
    entry = {k: v for k, v in entry.items() if v is not None}
    entry["series"] = series_id(entry)
    return written_problem(entry) or counts_problem(entry)


def check_run(
    where: str,
    manifest: models.RunManifest | None,
    record: models.RunRecord,
    kernel: models.KernelResults | None,
    batch: models.BatchResults | None,
) -> None:
    """Refuse (one SchemaError naming `where` and the field) a run whose line no reader
    would accept, before any of its files is written."""
    problem = run_problem(manifest, record, kernel, batch)
    if problem is not None:
        raise SchemaError(f"{where}: {problem}; refused, nothing written")
