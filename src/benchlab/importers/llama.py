"""llama-bench outputs (JSON, JSONL, CSV, SQL, Markdown) as run dirs: one run per configuration."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from benchlab.benchmarks.llama_bench import results_from_rows
from benchlab.benchmarks.llama_rows import model_of, precision_of, read_rows
from benchlab.errors import BenchlabError, SchemaError
from benchlab.files import read_bytes
from benchlab.ids import check_id, sweep_stamp, utc_iso
from benchlab.importers.store import (
    ImportedRun,
    ImportReport,
    existing_run,
    prepare_run,
    stamp_time,
    write_prepared,
)
from benchlab.layout import (
    BATCH,
    KERNEL,
    RAW_DIR,
    Store,
    dump_model,
    read_model,
    write_model,
)
from benchlab.models import (
    CpuSpec,
    GitInfo,
    GpuSpec,
    HardwareSpec,
    HarnessInfo,
    MachineSpecs,
    ModelInfo,
    OsSpec,
    RunManifest,
)
from benchlab.redact.public_ids import public_spec_id
from benchlab.redact.shapes import public_commit, public_kv_type, public_model_type

_CONFIG_FIELDS = (
    "n_threads",
    "n_gpu_layers",
    "n_batch",
    "n_ubatch",
    "backends",
    "flash_attn",
    "type_k",
    "type_v",
    "split_mode",
    "use_mmap",
)


MAX_IMPORT_BYTES = 64 * 1024 * 1024
"""The largest llama-bench output read (a run of thousands of rows is a few MB)."""


def _groups(rows: Iterable[dict[str, Any]]) -> dict[tuple[str, ...], list[dict[str, Any]]]:
    """Rows of one configuration (model file, threads, layers, batch ...) form one run."""
    grouped: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for row in rows:
        key = (
            str(row.get("model_filename") or row.get("model_type")),
            *(str(row.get(name)) for name in _CONFIG_FIELDS),
            str(row.get("build_commit")),
        )
        grouped.setdefault(key, []).append(row)
    return grouped


def import_llama_bench(
    store: Store,
    path: Path,
    machine_id: str,
    *,
    timestamp: datetime | None = None,
    model: str | None = None,
    tags: Iterable[str] = (),
) -> ImportReport:
    """Import one llama-bench output file (json, jsonl, csv, markdown or sql) for one machine."""
    check_id(machine_id, "machine id")
    data = read_bytes(path, cap=MAX_IMPORT_BYTES)
    try:
        rows = read_rows(data.decode("utf-8", errors="replace"))
    except BenchlabError as exc:
        raise SchemaError(f"{path}: {exc}") from None
    digest = hashlib.sha256(data).hexdigest()
    fallback = timestamp or datetime.fromtimestamp(path.stat().st_mtime, timezone.utc)
    report = ImportReport()
    ready: list[ImportedRun] = []
    for rows_of_run in _groups(rows).values():
        first = rows_of_run[0]
        name = model or model_of(first)
        precision = precision_of(first)
        content = json.loads(json.dumps(rows_of_run, sort_keys=True, default=str))
        spec = public_spec_id(machine_id, name, precision, "import", content)
        existing = existing_run(store, machine_id, spec)
        if existing:
            report.unchanged.append(existing)
            continue
        moment = stamp_time(
            min((str(r.get("test_time") or "") for r in rows_of_run), default=None), fallback
        )
        run_id = check_id(f"{spec}-{sweep_stamp(moment)}", "run id")
        rows_of_run, first = _public_commits(rows_of_run, run_id, report)
        try:
            parsed = results_from_rows(
                rows_of_run, run_id, precision=precision, model=name, where=path.name
            )
        except BenchlabError as exc:
            raise SchemaError(f"{path}: {exc}") from None
        except ValidationError as exc:  # a row value no run file can hold (n_threads 1e19)
            error = exc.errors()[0]
            where = ".".join(str(part) for part in error["loc"]) or "$"
            raise SchemaError(f"{path}: {exc.title}.{where}: {error['msg']}; refused") from None
        kernel, batch = parsed.kernel, parsed.batch
        kernel.model = batch.model = name
        manifest = RunManifest(
            run_id=run_id,
            machine_id=machine_id,
            timestamp=utc_iso(moment),
            git=GitInfo(rev=str(first["build_commit"]) if first.get("build_commit") else None),
            harness=HarnessInfo(
                name="llama-bench", version=str(first.get("build_number") or "") or None
            ),
            model=ModelInfo(
                name=name,
                precision=precision,
                quantization=public_model_type(first.get("model_type")),
            ),
            config={
                k: first[k]
                for k in _CONFIG_FIELDS
                if first.get(k) is not None
                and (k not in ("type_k", "type_v") or public_kv_type(str(first[k])))
            },
            tags=sorted({"imported", "llama-bench", *tags}),
            artifacts={"kernel": KERNEL, "batch": BATCH, "raw": f"{RAW_DIR}/imported.json"},
            backend="llama-bench",
            mode="import",
            spec_id=spec,
            provenance={
                "source": "llama-bench",
                "file": path.name,
                "sha256": digest,
                "rows": len(rows_of_run),
            },
        )
        raw = {"rows": content}
        ready.append(prepare_run(str(path), manifest, kernel, batch, raw, parsed.facts))
        report.created.append(run_id)
    for run in ready:  # every run of the file passed the writer contract: none is half-imported
        write_prepared(store, run)
    first_test = min((str(r.get("test_time") or "") for r in rows), default=None)
    write_specs(store, machine_id, rows, stamp_time(first_test or None, fallback))
    return report


IMPORTED_SPECS_TAG = "imported-specs"
"""The tag of machine specs an import wrote (from llama-bench's own fields), which a later
import may bring up to date; specs without it (`bench onboard`'s) are never touched."""


def write_specs(store: Store, machine_id: str, rows: list[dict[str, Any]], when: datetime) -> None:
    """The machine's private specs from what llama-bench says of it (`cpu_info`, `gpu_info`,
    `backends`): the Machines table and its specs name an imported machine. Written where the
    machine has no specs yet, or has specs an earlier import wrote; nothing else is known
    (the OS is `unknown`, never guessed)."""
    cpu = _newest_text(rows, "cpu_info")
    gpus = [g.strip() for g in (_newest_text(rows, "gpu_info") or "").split(",") if g.strip()]
    backends = _newest_text(rows, "backends")
    if cpu is None and not gpus:
        return
    path = store.private_specs(machine_id)
    registered = utc_iso(when)
    held = None
    if path.is_file():
        try:
            held = read_model(path, MachineSpecs)
        except BenchlabError:
            return  # not ours to repair: the build names a bad specs file
        if IMPORTED_SPECS_TAG not in held.tags:
            return
        registered = min(registered, held.registered_at)
        cpu = cpu or held.hardware.cpu.model
    specs = MachineSpecs(
        machine_id=machine_id,
        registered_at=registered,
        hardware=HardwareSpec(
            cpu=CpuSpec(model=cpu or "unknown"), gpu=[GpuSpec(model=g) for g in gpus]
        ),
        os=OsSpec(name="unknown"),
        runtime={"backends": backends} if backends else {},
        tags=[IMPORTED_SPECS_TAG, "llama-bench"],
    )
    if held is None or dump_model(held) != dump_model(specs):  # a re-import writes nothing
        write_model(path, specs, root=store.root)


def _newest_text(rows: list[dict[str, Any]], key: str) -> str | None:
    """The last non-empty text value of `key` among the rows (bounded: 160 characters)."""
    for row in reversed(rows):
        value = row.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()[:160]
    return None


def _public_commits(
    rows: list[dict[str, Any]], run_id: str, report: ImportReport
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The rows with every `build_commit` that is not a hex commit left out (and counted).

    The commit reaches the run's identity, its engine string and its manifest, all of which
    are published; the private raw copy (raw/imported.json) keeps the row as it was."""
    out = []
    withheld = False
    for row in rows:
        commit = row.get("build_commit")
        if commit is not None and public_commit(commit) is None:
            row = {k: v for k, v in row.items() if k != "build_commit"}
            withheld = withheld or commit != "unknown"
        out.append(row)
    if withheld:
        report.withheld.append(f"{run_id}: build_commit")
    return out, out[0]


# --- asv ----------------------------------------------------------------------------------
