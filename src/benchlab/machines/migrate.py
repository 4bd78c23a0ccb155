"""Import results people already have: llama-bench outputs and asv result directories.

Each imported result becomes an ordinary run dir (manifest, kernel, batch, record, raw/) in
the private store, with its provenance in the manifest, so every query, chart and regression
check treats it like a measured run. The record's metrics and identity come from the same
derivations a live sweep uses (`benchlab.metrics`, `benchlab.identity`, and for llama-bench
`benchmarks.llama_bench.results_from_rows`), so an imported llama-bench file and a live sweep
of the same configuration are the same measurement in the catalog. Run ids hash the imported
content: re-importing the same file finds its runs already there and changes nothing.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from benchlab.benchmarks.llama_bench import results_from_rows
from benchlab.benchmarks.llama_rows import model_of, precision_of, read_rows
from benchlab.errors import BenchlabError, ConfigError, SchemaError
from benchlab.identity import derive as derive_identity
from benchlab.ids import check_id, slug, spec_id, sweep_stamp, utc_iso
from benchlab.layout import (
    BATCH,
    KERNEL,
    MANIFEST,
    RAW_DIR,
    RECORD,
    Store,
    atomic_write_json,
    read_json,
    write_model,
)
from benchlab.metrics import derive as derive_metrics
from benchlab.models import (
    BatchBaseline,
    BatchPeak,
    BatchResults,
    DecodeResult,
    GitInfo,
    HarnessInfo,
    KernelBenchmark,
    KernelResults,
    ModelInfo,
    RunManifest,
    RunRecord,
    Timings,
)
from benchlab.redact.shapes import public_commit

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


def _existing(store: Store, machine_id: str, spec: str) -> str | None:
    """A run of this exact content already imported (any stamp)."""
    machine_dir = store.machine_dir(machine_id)
    if not machine_dir.is_dir():
        return None
    for candidate in sorted(machine_dir.glob(f"{spec}-*")):
        if (candidate / MANIFEST).is_file():
            return candidate.name
    return None


def _write_run(
    store: Store,
    manifest: RunManifest,
    kernel: KernelResults,
    batch: BatchResults,
    raw: dict[str, Any],
    facts: dict[str, Any] | None = None,
    *,
    metrics: dict[str, float] | None = None,
) -> None:
    run_dir = store.run_dir(manifest.machine_id, manifest.run_id)
    atomic_write_json(run_dir / RAW_DIR / "imported.json", raw)
    write_model(run_dir / KERNEL, kernel)
    write_model(run_dir / BATCH, batch)
    write_model(run_dir / RECORD, _record(manifest, kernel, batch, facts or {}, metrics))
    write_model(run_dir / MANIFEST, manifest)  # last: a run dir counts once its manifest exists


def _record(
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
        identity=identity,
    )


def _stamp_time(text: str | None, fallback: datetime) -> datetime:
    if text:
        try:
            return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc)
        except ValueError:
            pass
    return fallback


# --- llama-bench --------------------------------------------------------------------------


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
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        rows = read_rows(data.decode("utf-8", errors="replace"))
    except BenchlabError as exc:
        raise SchemaError(f"{path}: {exc}") from None
    digest = hashlib.sha256(data).hexdigest()
    fallback = timestamp or datetime.fromtimestamp(path.stat().st_mtime, timezone.utc)
    report = ImportReport()
    for rows_of_run in _groups(rows).values():
        first = rows_of_run[0]
        name = model or model_of(first)
        precision = precision_of(first)
        content = json.loads(json.dumps(rows_of_run, sort_keys=True, default=str))
        spec = spec_id(machine_id, name, precision, "import", content)
        existing = _existing(store, machine_id, spec)
        if existing:
            report.unchanged.append(existing)
            continue
        moment = _stamp_time(
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
                quantization=str(first.get("model_type") or "") or None,
            ),
            config={k: first[k] for k in _CONFIG_FIELDS if first.get(k) is not None},
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
        _write_run(store, manifest, kernel, batch, {"rows": content}, parsed.facts)
        report.created.append(run_id)
    return report


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


def _asv_values(entry: Any, columns: list[str] | None) -> tuple[list[Any], list[Any]]:
    """(results, params) of one benchmark across asv's result-file versions."""
    if columns is not None and isinstance(entry, list):
        row = dict(zip(columns, entry, strict=False))
        result, params = row.get("result"), row.get("params") or []
    elif isinstance(entry, dict):
        result, params = entry.get("result"), entry.get("params") or []
    else:
        result, params = entry, []
    return (result if isinstance(result, list) else [result]), params


def import_asv(store: Store, results_dir: Path, *, machine_id: str | None = None) -> ImportReport:
    """Import an asv results directory (results/<machine>/machine.json + result files).

    Each benchmark at each of its parameter combinations, in each result file (one commit),
    becomes one run: the benchmark and combination name its series (`f(n=100, kind=list)`),
    the commit is its revision, and its value is a registry metric with asv's unit and
    direction (`asv_metric`: time_s, mem_bytes or track_value; lower is better, as asv counts
    an increase as a regression). A combination asv recorded no value for is a failed run.
    """
    if not results_dir.is_dir():
        raise ConfigError(f"{results_dir}: not a directory")
    units: dict[str, Any] = {}
    if (results_dir / "benchmarks.json").is_file():
        units = read_json(results_dir / "benchmarks.json")
    machine_files = sorted(results_dir.glob("*/machine.json"))
    if not machine_files:
        raise ConfigError(f"{results_dir}: no <machine>/machine.json: not an asv results dir")
    report = ImportReport()
    index = RunIndex(store)
    for machine_file in machine_files:
        info = read_json(machine_file)
        machine = check_id(
            machine_id or slug(str(info.get("machine") or machine_file.parent.name)), "machine id"
        )
        for result_file in sorted(machine_file.parent.glob("*.json")):
            if result_file.name == "machine.json":
                continue
            _import_asv_file(index, result_file, machine, units, report)
    return report


def _import_asv_file(
    index: RunIndex, path: Path, machine: str, units: dict[str, Any], report: ImportReport
) -> None:
    """Every benchmark x parameter combination of one asv result file (one commit) as one
    run, its series the benchmark and the combination, its revision the commit."""
    data = read_json(path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
        raise SchemaError(f"{path}: $.results: expected an object of benchmark results")
    columns = data.get("result_columns")
    date_ms = data.get("date")
    moment = (
        datetime.fromtimestamp(date_ms / 1000, timezone.utc)
        if isinstance(date_ms, (int, float)) and not isinstance(date_ms, bool)
        else datetime.fromtimestamp(0, timezone.utc)
    )
    commit = str(data.get("commit_hash") or "")
    for name, entry in sorted(data["results"].items()):
        values, params = _asv_values(entry, columns)
        info = units.get(name) if isinstance(units, dict) else None
        info = info if isinstance(info, dict) else {}
        combos = asv_combinations(params)
        if values == [None]:
            values = [None] * len(combos)  # the whole benchmark failed: no value at all
        if len(combos) != len(values):
            raise SchemaError(
                f"{path}: $.results.{name}: {len(values)} result(s) for {len(combos)} "
                "parameter combination(s)"
            )
        unit = str(info.get("unit") or "")
        for combo, value in zip(combos, values, strict=True):
            point = AsvPoint(name, unit, info.get("param_names") or [], combo, value)
            _import_asv_point(index, point, machine, (path, digest, data, commit, moment), report)


@dataclass(frozen=True)
class AsvPoint:
    """One benchmark at one parameter combination of one asv result file."""

    benchmark: str
    unit: str
    param_names: list[str]
    combo: tuple[str, ...]
    value: Any

    @property
    def params(self) -> dict[str, str]:
        names = list(self.param_names) + [f"p{i}" for i in range(len(self.param_names), 99)]
        return {str(k): _unquote(v) for k, v in zip(names, self.combo, strict=False)}

    @property
    def label(self) -> str:
        """The benchmark and its parameters: the series' model name (`f(n=100, kind=list)`)."""
        if not self.combo:
            return self.benchmark
        return f"{self.benchmark}({', '.join(f'{k}={v}' for k, v in self.params.items())})"

    @property
    def throughput(self) -> bool:
        """A tokens-per-second benchmark (unit tok/s, or tok_per_sec in its name)."""
        return "tok" in self.unit or "tok_per_sec" in self.benchmark

    @property
    def number(self) -> float | None:
        value = self.value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        return float(value) if math.isfinite(value) else None


def _asv_results(run_id: str, point: AsvPoint) -> tuple[KernelResults, BatchResults]:
    """kernel.json and batch.json of one point: empty but for a throughput benchmark,
    whose value is the decode rate and the batch-1 peak."""
    rate = point.number if point.throughput else None
    kernel = KernelResults(
        run_id=run_id,
        engine="asv",
        precision="asv",
        model=point.label,
        benchmark=KernelBenchmark(decode=DecodeResult(tok_per_sec=rate) if rate else None),
    )
    batch = BatchResults(
        run_id=run_id,
        engine="asv",
        model=point.label,
        precision="asv",
        baseline=BatchBaseline(batch=1, tok_per_sec=rate) if rate else None,
        peak=BatchPeak(batch=1, agg_tok_per_sec=rate) if rate else None,
    )
    return kernel, batch


def asv_combinations(params: list[Any]) -> list[tuple[str, ...]]:
    """asv's parameter grid in its result order: the product of each parameter's values,
    the last parameter varying fastest (a benchmark without parameters has one)."""
    grid = [[str(v) for v in values] for values in params if isinstance(values, list)]
    return list(itertools.product(*grid)) if grid else [()]


def asv_metric(unit: str) -> str:
    """The registry metric an asv unit is held in: seconds for time benchmarks, bytes for
    memory ones, and `track_value` (its unit kept in the run's config) for the rest."""
    return {"seconds": "time_s", "bytes": "mem_bytes"}.get(unit, "track_value")


def _unquote(text: str) -> str:
    """asv writes parameter values as Python reprs: `'list'` is the string list."""
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _import_asv_point(
    index: RunIndex,
    point: AsvPoint,
    machine: str,
    source: tuple[Path, str, dict[str, Any], str, datetime],
    report: ImportReport,
) -> None:
    path, digest, data, commit, moment = source
    raw = {
        "benchmark": point.benchmark,
        "params": point.params,
        "result": point.value,
        "unit": point.unit,
        "commit": commit,
        "env": data.get("env_name"),
        "file": path.name,
    }
    spec = spec_id(machine, point.label, "asv", "import", raw)
    existing = index.find(machine, spec)
    if existing:
        report.unchanged.append(existing)
        return
    run_id = check_id(f"{spec}-{sweep_stamp(moment)}", "run id")
    index.add(machine, spec, run_id)
    kernel, batch = _asv_results(run_id, point)
    manifest = RunManifest(
        run_id=run_id,
        machine_id=machine,
        timestamp=utc_iso(moment),
        git=GitInfo(rev=commit[:8] or None),
        harness=HarnessInfo(name="asv", version=str(data.get("version") or "") or None),
        model=ModelInfo(name=point.label, precision="asv"),
        config={"asv_params": point.params, "unit": point.unit, "env": data.get("env_name")},
        tags=["asv", "imported"],
        artifacts={"kernel": KERNEL, "batch": BATCH, "raw": f"{RAW_DIR}/imported.json"},
        backend="asv",
        mode="import",
        spec_id=spec,
        provenance={
            "source": "asv",
            "file": path.name,
            "benchmark": point.benchmark,
            "sha256": digest,
        },
    )
    number = point.number
    if point.throughput:  # tok/s: the decode and peak figures, derived as a sweep's are
        _write_run(index.store, manifest, kernel, batch, raw)
    else:
        metrics = {} if number is None else {asv_metric(point.unit): number}
        _write_run(index.store, manifest, kernel, batch, raw, metrics=metrics)
    report.created.append(run_id)
