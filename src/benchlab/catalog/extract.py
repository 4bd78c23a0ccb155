"""One run dir as a catalog entry: read, check and redact what the run files say."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from stat import S_ISREG
from typing import Any

import orjson

from benchlab import models
from benchlab.catalog.format import GATE_STATUSES
from benchlab.catalog.verdicts import detail_of
from benchlab.errors import BenchlabError, ParseError, SchemaError, StoreError
from benchlab.identity import IDENTITY_FIELDS, SERIES_FIELDS, precision_family, series_id
from benchlab.identity import derive as derive_identity
from benchlab.ids import check_id, slug
from benchlab.layout import (
    BATCH,
    KERNEL,
    MANIFEST,
    MAX_JSON_BYTES,
    RECORD,
    REQUIRED_RUN_FILES,
    loads_json,
    parse_model,
)
from benchlab.metrics import CATALOG_FIELDS, EXTRA_FIELD, declare, extra_entry, repeat_samples
from benchlab.metrics import derive as derive_metrics
from benchlab.models import HOLE_ERROR_PREFIX, HOLE_TAG
from benchlab.redact import Policy, ScanMemo, scrub_public
from benchlab.redact.shapes import (
    WITHHELD,
    check_public_field,
    model_slug,
    refuse_hostname_as_id,
    withhold_unsafe,
)

RUN_FILES = (*REQUIRED_RUN_FILES, RECORD)

# A build derives the same model slugs and series ids for thousands of entries: both are
# pure functions of a few values, remembered here (bounded).
_MEMO_LIMIT = 50_000
_slugs: dict[str, str] = {}
_series: dict[str, str] = {}


def _model_slug(name: str) -> str:
    found = _slugs.get(name)
    if found is None:
        if len(_slugs) >= _MEMO_LIMIT:
            _slugs.clear()
        found = _slugs[name] = model_slug(name)
    return found


def _series_id(entry: dict[str, Any]) -> str:
    """`identity.series_id(entry)`, remembered by the repr of the fields it reads (equal
    reprs of these JSON values are equal values of equal types)."""
    key = repr([entry.get(name) for name in SERIES_FIELDS])
    found = _series.get(key)
    if found is None:
        if len(_series) >= _MEMO_LIMIT:
            _series.clear()
        found = _series[key] = series_id(entry)
    return found


# --- reading one run dir ------------------------------------------------------------------

_LONG_NUMBER = re.compile(rb"\d{19}")


class Unreadable:
    """A run file that is there but is not read, and why: `read_run_file` raises it as one
    line naming the file, so the build sets that run aside and goes on."""

    __slots__ = ("error",)

    def __init__(self, error: BenchlabError) -> None:
        self.error = error


_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
"""A run file is opened without following a link (a link to /etc/shadow is refused, not
read) and without blocking (a FIFO planted as record.json would wait for a writer forever,
holding the catalog lock): what was opened is then checked to be a regular file."""
_DIR_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_DIRECTORY", 0)


def read_run_dir(run_dir: str) -> dict[str, Any]:
    """The bytes of each run file a run dir holds (an `Unreadable` where it is there but
    not a regular file, or cannot be read), found by opening them: a dir listing costs as
    much as the reads. The files are opened relative to the dir, opened without following
    a link, so a run dir that is a symlink (to outside the store) is refused as a whole."""
    try:
        dir_fd = os.open(run_dir, _DIR_FLAGS)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        if os.path.islink(run_dir):
            raise StoreError(
                f"{run_dir}: a symlink; run dirs must be real dirs inside the store; set aside"
            ) from None
        raise StoreError(f"{run_dir}: cannot read: {exc.strerror}") from None
    out: dict[str, Any] = {}
    try:
        for name in RUN_FILES:
            found = _open_regular(f"{run_dir}/{name}", name, dir_fd)
            if found is not None:
                out[name] = found
    finally:
        os.close(dir_fd)
    return out


def _open_regular(path: str, name: str, dir_fd: int | None = None) -> Any:
    """A run file's bytes; None where it is absent; an `Unreadable` where it is a link, a
    FIFO, a device or a dir, is too large, or cannot be read."""
    try:
        fd = os.open(name, _OPEN_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if os.path.islink(path):
            return Unreadable(StoreError(f"{path}: a symlink; run files must be regular files"))
        return Unreadable(StoreError(f"{path}: cannot read: {exc.strerror}"))
    try:
        info = os.fstat(fd)
        if not S_ISREG(info.st_mode):
            return Unreadable(
                StoreError(f"{path}: not a regular file (a FIFO, device or dir); set aside")
            )
        if info.st_size > MAX_JSON_BYTES:
            return Unreadable(
                SchemaError(f"{path}: $: larger than {MAX_JSON_BYTES} bytes; refused")
            )
        return _read_fd(fd, path)
    except OSError as exc:
        return Unreadable(StoreError(f"{path}: cannot read: {exc.strerror}"))
    finally:
        os.close(fd)


_READ = 1 << 16


def _read_fd(fd: int, path: str) -> Any:
    """A regular file's bytes: a read shorter than asked for is its end. Bounded: a file
    that grows past MAX_JSON_BYTES while it is read is refused."""
    data = os.read(fd, _READ)
    if len(data) < _READ:
        return data
    parts = [data]
    total = len(data)
    while parts[-1]:
        if total > MAX_JSON_BYTES:
            return Unreadable(
                SchemaError(f"{path}: $: larger than {MAX_JSON_BYTES} bytes; refused")
            )
        parts.append(os.read(fd, 1 << 20))
        total += len(parts[-1])
    return b"".join(parts)


INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def check_int_range(doc: Any, where: Path | str) -> None:
    """Refuse an integer outside 64 bits, naming its JSON path. Such a number reads fine
    here but cannot be written to a shard (orjson) nor held by the columnar query cache:
    left in, it would fail every later build instead of this one run."""
    stack: list[tuple[str, Any]] = [("$", doc)]
    while stack:
        pointer, value = stack.pop()
        if isinstance(value, dict):
            stack.extend((f"{pointer}.{key}", item) for key, item in value.items())
        elif isinstance(value, list):
            stack.extend((f"{pointer}[{i}]", item) for i, item in enumerate(value))
        elif isinstance(value, int) and not INT64_MIN <= value <= INT64_MAX:
            digits = str(value)
            shown = digits if len(digits) <= 24 else f"{digits[:20]}...({len(digits)} digits)"
            raise SchemaError(f"{where}: {pointer}: integer {shown} exceeds 64 bits; refused")


def read_run_file(path: Path | str, data: Any = None) -> Any:
    """`layout.read_json(path)`, about twice as fast, and never following a link nor
    waiting on a FIFO: orjson parses a file when it can read it exactly as the standard
    library does; the rest goes to `read_json`'s own parser, which refuses or reads it as
    it always has. orjson refuses NaN, infinities, numbers that overflow, lone surrogates,
    a BOM, other encodings and nesting past 1024, so those reach the guarded parser; it
    reads integers past 64 bits as floats, so a file with a run of 19 digits anywhere goes
    there too (`read_run_doc` then refuses an integer past 64 bits). `data`: its bytes (or
    `Unreadable`), if already read."""
    if data is None:
        data = _open_regular(os.fspath(path), os.fspath(path))
        if data is None:
            raise StoreError(f"{path}: file not found")
    if isinstance(data, Unreadable):
        raise data.error
    if _LONG_NUMBER.search(data) is None:
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    return loads_json(data, Path(path))  # the guarded parser: parses or refuses as always


def read_run_doc(path: str, data: Any = None) -> Any:
    """A run file as the catalog may hold it: `read_run_file`, and an integer past 64 bits
    refused (only a file with a run of 19 digits is walked for one)."""
    if data is None:
        data = _open_regular(path, path)
        if data is None:
            raise StoreError(f"{path}: file not found")
    doc = read_run_file(path, data)
    if not isinstance(data, Unreadable) and _LONG_NUMBER.search(data) is not None:
        check_int_range(doc, path)
    return doc


def _validate(path: Path | str, kind: str, data: Any) -> Any:
    """Validate one run file with its pydantic model; errors name the file and JSON path."""
    cls: type[Any] = {
        MANIFEST: models.RunManifest,
        KERNEL: models.KernelResults,
        BATCH: models.BatchResults,
        RECORD: models.RunRecord,
    }[kind]
    return parse_model(path, cls, data)


def _same_run(path: Path | str, doc: Any, run_id: str) -> None:
    if doc.run_id != run_id:
        raise SchemaError(f"{path}: $.run_id: {doc.run_id!r} differs from the run's {run_id!r}")


def _same_machine(
    base: str, manifest: models.RunManifest | None, record: models.RunRecord | None
) -> None:
    """One run, one machine: the manifest's (else the record's) machine id, the record's
    and its identity's must agree, or the run would be filed under a machine it did not
    run on (the identity's, which the entry copies)."""
    if manifest is not None:
        machine, source = manifest.machine_id, MANIFEST
    else:
        assert record is not None  # extract_entry refuses a dir with neither
        machine, source = record.machine_id, RECORD
    if record is None:
        return
    claims = [("$.machine_id", record.machine_id)]
    if isinstance(record.identity, dict) and record.identity.get("machine_id") is not None:
        claims.append(("$.identity.machine_id", record.identity["machine_id"]))
    for pointer, value in claims:
        if value != machine:
            raise SchemaError(
                f"{base}/{RECORD}: {pointer}: {value!r} differs from the run's machine "
                f"{machine!r} ({source}); refused"
            )


def extract_entry(
    store_root: Path,
    run_dir: Path,
    present: Iterable[str] | None = None,
    policy: Policy | None = None,
    memo: ScanMemo | None = None,
    files: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One run dir as a catalog entry (a plain dict, redacted through `scrub_public`).

    A dir with manifest, kernel and batch is a run; record.json is optional (absent means
    ok). A failed record with some of the required files missing is still a run: a failed
    attempt must show up, not vanish. Anything else raises StoreError naming the dir.
    `policy`: the build's redaction policy, found once (finding it per entry costs more than
    the rest of the extraction); `memo`: the build's scan memo of that policy (repeated
    strings are scanned once; the entry is the same); `files`: what `read_run_dir` read
    (then `present` is its keys).
    """
    if files is not None:
        names = set(files)
    else:
        names = set(present) if present is not None else {p.name for p in run_dir.iterdir()}
    base = os.fspath(run_dir)
    docs: dict[str, Any] = {}
    for name in RUN_FILES:
        if name in names:
            path = f"{base}/{name}"
            data = files.get(name) if files is not None else None
            docs[name] = _validate(path, name, read_run_doc(path, data))
    record = docs.get(RECORD)
    missing = [name for name in REQUIRED_RUN_FILES if name not in docs]
    if missing and (record is None or record.status != "failed"):
        raise StoreError(f"{run_dir}: incomplete run dir, missing {', '.join(missing)}")
    manifest = docs.get(MANIFEST)
    if manifest is not None:
        run_id = manifest.run_id
    elif record is not None:  # a failed run's dir may hold its record alone
        run_id = record.run_id
    else:  # not reached: the check above names what is missing
        raise StoreError(f"{run_dir}: incomplete run dir, missing {MANIFEST}")
    for name, doc in docs.items():
        _same_run(f"{base}/{name}", doc, run_id)
    check_id(run_id, "run id")
    _same_machine(base, manifest, record)
    entry: dict[str, Any] = entry_from_docs(
        run_id, manifest, record, docs.get(KERNEL), docs.get(BATCH), f"{base}/{RECORD}"
    )
    rel = run_dir.relative_to(store_root).as_posix()
    entry["path"] = rel + "/"
    entry = scrub_public({k: v for k, v in entry.items() if v is not None}, policy, memo)
    # The slug of the public name: a tell the scrub replaced cannot survive in the id.
    entry["model_id"] = _model_slug(str(entry["model"]))
    entry["series"] = _series_id(entry)  # of the public values, as every reader sees them
    parse_model(run_dir, models.CatalogEntry, entry)
    return entry


PUBLIC_ID_FIELDS = ("machine_id", "model_id", "precision", "backend", "mode")


def check_public_entry(
    entry: dict[str, Any],
    hosts: Iterable[str],
    policy: Policy,
    passed: set[tuple[str, str]] | None = None,
) -> list[str]:
    """The structural defence: every public id field has the shape of an id (not a path, an
    address, a user@host, or any tell the policy knows), and a machine id that is a host
    name is refused unless redaction.yaml's `allow.values` says that name is public: a run
    that fails is refused (SchemaError). A tag that fails is dropped from the entry, and the
    returned warnings say so. A tell no pattern knows still cannot reach a public file
    through these fields.

    Every other field must have its declared shape (`shapes.PUBLIC_VALUE_SHAPES`: a hex
    commit, a build tag, a slug, bounded scrubbed text ...; a sweep's params are numbers,
    booleans or short slugs unless a sweep declares them `public_text`). A value that has
    not is withheld (emptied), with one warning per run naming the fields (`<run>: withheld
    <field>, <field>: ...`, which the build summary counts), and the series id is taken
    again of what is left: a pattern nobody wrote yet cannot publish a new kind of tell.

    `passed`: (field, value) pairs already found safe under the same hosts and policy (a
    build passes one set for all its entries). The checks are pure, and a fleet repeats a
    few machines, models and tags across a million runs, so each is checked once."""
    where = entry.get("path") or entry.get("run_id")
    seen = passed if passed is not None else set()
    try:
        for name in PUBLIC_ID_FIELDS:
            value = entry.get(name)
            if value is not None and (name, str(value)) not in seen:
                check_public_field(name, str(value), policy)
                seen.add((name, str(value)))
        machine = str(entry["machine_id"])
        if ("host", machine) not in seen:
            allow = machine.lower() in policy.allow_values
            refuse_hostname_as_id(machine, hosts, allow_public=allow)
            seen.add(("host", machine))
    except BenchlabError as exc:
        raise SchemaError(f"{where}: {exc}") from None
    kept, warnings = [], []
    for tag in entry.get("tags", []):
        if ("tags", tag) in seen:
            kept.append(tag)
            continue
        try:
            check_public_field("tags", tag, policy)
        except BenchlabError as exc:
            warnings.append(f"{where}: tag dropped: {exc}")
        else:
            kept.append(tag)
            seen.add(("tags", tag))
    entry["tags"] = kept
    withheld = withhold_unsafe(entry, policy, policy.public_text, seen)
    if withheld:
        warnings.append(f"{where}{WITHHELD}{', '.join(withheld)}: not of their public shape")
    if any(name.split(".", 1)[0] in SERIES_FIELDS for name in withheld):
        entry["series"] = series_id(entry)
    return warnings


def _declared_metrics(
    metrics: dict[str, float | None], spec: models.RunSpec | None, record_path: Path | str
) -> dict[str, dict[str, Any]] | None:
    """The run's declared metrics as the catalog carries them (ARCHITECTURE.md, Metrics):
    each metric its sweep declared (`metrics:`, in the spec's params) that the run
    measured, with the declared unit and direction. A declaration that is not one is a
    SchemaError naming the record."""
    if spec is None or not spec.params.get("metrics"):
        return None
    try:
        declared = declare(f"{record_path}: $.spec.params", spec.params["metrics"])
    except BenchlabError as exc:
        raise SchemaError(str(exc)) from None
    return extra_entry(metrics, declared)


def entry_from_docs(
    run_id: str,
    manifest: models.RunManifest | None,
    record: models.RunRecord | None,
    kernel: models.KernelResults | None,
    batch: models.BatchResults | None,
    record_path: Path | str,
) -> dict[str, Any]:
    """The entry's fields, before redaction: the record's identity and metrics are copied,
    never recomputed; a dir without a record (an import, a hand-made run) goes through the
    same derivations the runner uses."""
    spec = record.spec if record is not None else None
    entry: dict[str, Any] = {"run_id": run_id}
    if manifest is not None:
        model = manifest.model.name
        entry.update(
            machine_id=manifest.machine_id,
            timestamp=manifest.timestamp,
            precision=manifest.model.quantization or manifest.model.precision,
            backend=manifest.backend,
            mode=manifest.mode,
            spec_id=manifest.spec_id,
        )
        tags = list(manifest.tags)
    else:
        assert record is not None  # extract_entry refuses a dir with neither
        model = spec.model if spec else "unknown"
        entry.update(
            machine_id=record.machine_id,
            timestamp=record.timings.started_at or record.timings.finished_at or "",
            precision=spec.precision if spec else "unknown",
            backend=spec.backend if spec else None,
            mode=spec.mode if spec else None,
        )
        tags = list(spec.tags) if spec else []
    model_id = _model_slug(model)
    entry["model"] = model if model_id == slug(model) else model_id  # never a path
    entry["model_id"] = model_id
    if record is not None:
        tags.extend(record.tags)
        if (record.error or "").startswith(HOLE_ERROR_PREFIX):
            tags.append(HOLE_TAG)  # never measured: the site's fleet health counts these
        entry.update(
            status=record.status,
            failure_kind=record.failure_kind,
            spec_id=record.spec_id,
            attempt=record.attempt,
            attempts=record.attempts,
            warnings=len(record.warnings),
        )
    else:
        entry["status"] = "ok"
    entry["tags"] = sorted(set(tags))
    verdict = manifest.gate if manifest is not None else None
    if verdict is not None and verdict.status in GATE_STATUSES:  # --publish wrote it
        entry.update(gate=verdict.status, gate_detail=detail_of(verdict))

    config = manifest.config if manifest is not None else {}
    prompt_tokens = spec.prompt_tokens if spec else config.get("prompt_tokens")
    metrics: dict[str, float | None]
    if record is not None and (record.metrics or record.status != "ok"):
        metrics, tests = dict(record.metrics), list(record.tests)
        if record.status == "ok" and kernel is not None and batch is not None:
            # A record's partial metrics do not hide what kernel.json and batch.json hold
            # (prefill, baseline): the one derivation fills what the record left out.
            try:
                derived, derived_tests = derive_metrics(kernel, batch, prompt_tokens=prompt_tokens)
            except ParseError:
                derived, derived_tests = {}, []
            for key, value in derived.items():
                if metrics.get(key) is None:
                    metrics[key] = value
            tests = tests or derived_tests
    elif kernel is not None and batch is not None:
        derived, tests = derive_metrics(kernel, batch, prompt_tokens=prompt_tokens)
        metrics = {k: v for k, v in derived.items()}
    else:
        metrics, tests = {}, []
    for name in CATALOG_FIELDS:
        entry[name] = metrics.get(name)
    entry[EXTRA_FIELD] = _declared_metrics(metrics, spec, record_path)
    samples = metrics.get("samples")
    if samples is not None:
        entry["samples"] = int(samples)
    held = _metric_samples(record, kernel, batch, prompt_tokens, entry)
    if held:
        entry["metric_samples"] = held
    entry["tests"] = tests

    identity = record.identity if record is not None else None
    if identity is None:
        identity = derive_identity(
            machine_id=entry["machine_id"],
            model_id=model_id,
            precision=entry["precision"],
            backend=entry.get("backend"),
            mode=entry.get("mode"),
            threads=spec.threads if spec else config.get("threads"),
            prompt_tokens=prompt_tokens,
            gen_tokens=spec.gen_tokens if spec else config.get("gen_tokens"),
            batch_sizes=spec.batch_sizes if spec else config.get("batch_sizes"),
            params=spec.params if spec else config.get("params") or {},
            revision=config.get("revision"),
            facts=config.get("identity") if isinstance(config.get("identity"), dict) else None,
        )
    unknown = sorted(set(identity) - set(IDENTITY_FIELDS))
    if unknown:
        raise SchemaError(f"{record_path}: $.identity.{unknown[0]}: not an identity field")
    entry.update({name: identity.get(name) for name in IDENTITY_FIELDS})
    entry["model_id"] = _model_slug(str(entry["model_id"] or model_id))
    entry["precision_family"] = precision_family(str(entry["precision"]))

    if batch is not None:
        curve = sorted((p.batch, p.agg_tok_per_sec) for p in batch.points)
        if curve:
            entry["batch_curve"] = [{"batch": b, "agg_tok_per_sec": agg} for b, agg in curve]
    return entry


def _metric_samples(
    record: models.RunRecord | None,
    kernel: models.KernelResults | None,
    batch: models.BatchResults | None,
    prompt_tokens: int | None,
    entry: dict[str, Any],
) -> dict[str, Any] | None:
    """The run's samples per metric (ARCHITECTURE.md, Compare): the record's, else those of
    its kernel results (an import, a run recorded before samples were kept), for the metrics
    the entry carries."""
    if entry.get("status") != "ok":
        return None
    if record is not None and record.metric_samples:
        held = {k: v.model_dump() for k, v in record.metric_samples.items()}
    elif kernel is not None:
        try:
            held = repeat_samples(kernel, prompt_tokens, batch)
        except ParseError:
            held = {}
    else:
        held = {}
    kept = {k: v for k, v in sorted(held.items()) if entry.get(k) is not None}
    return kept or None
