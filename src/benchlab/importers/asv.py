"""asv result directories as run dirs: one series per benchmark and parameter combination, the
commit as the revision, the value in a registry metric with asv's unit."""

from __future__ import annotations

import hashlib
import itertools
import math
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from benchlab.errors import ConfigError, SchemaError
from benchlab.files import read_bytes
from benchlab.ids import check_id, sweep_stamp, utc_iso
from benchlab.importers.store import (
    ImportedRun,
    ImportReport,
    RunIndex,
    prepare_run,
    write_prepared,
)
from benchlab.layout import (
    BATCH,
    KERNEL,
    MAX_JSON_BYTES,
    RAW_DIR,
    Store,
    loads_json,
    read_json,
)
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
)
from benchlab.redact.public_ids import public_machine_id, public_spec_id


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
        machine = check_id(machine_id, "machine id") if machine_id else None
        if machine is None:  # asv's own name for it may be a host or a cluster node
            where = f"{machine_file}: machine"
            machine = public_machine_id(str(info.get("machine") or machine_file.parent.name), where)
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
    raw = read_bytes(path, cap=MAX_JSON_BYTES)
    data = loads_json(raw, path)
    digest = hashlib.sha256(raw).hexdigest()
    if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
        raise SchemaError(f"{path}: $.results: expected an object of benchmark results")
    columns = data.get("result_columns")
    moment = asv_moment(data.get("date"), path)
    commit = str(data.get("commit_hash") or "")
    ready: list[ImportedRun] = []
    for name, entry in sorted(data["results"].items()):
        values, params = _asv_values(entry, columns)
        info = units.get(name) if isinstance(units, dict) else None
        info = info if isinstance(info, dict) else {}
        # Counted before expanding: six parameters of 100 values each are 3.8 KB of JSON
        # and 10**12 combinations (ARCHITECTURE.md, The catalog: every input is bounded).
        size = asv_grid_size(params)
        if size > MAX_ASV_GRID:
            raise SchemaError(
                f"{path}: $.results.{name}.params: {size:,} parameter combinations, over the "
                f"cap of {MAX_ASV_GRID:,}; refused before expanding"
            )
        if values == [None]:
            values = [None] * size  # the whole benchmark failed: no value at all
        if size != len(values):
            raise SchemaError(
                f"{path}: $.results.{name}: {len(values)} result(s) for {size} "
                "parameter combination(s)"
            )
        unit = str(info.get("unit") or "")
        for combo, value in zip(asv_combinations(params), values, strict=True):
            point = AsvPoint(name, unit, info.get("param_names") or [], combo, value)
            found = _import_asv_point(
                index, point, machine, (path, digest, data, commit, moment), report
            )
            if found is not None:
                ready.append(found)
    for run in ready:  # every run of the file passed the writer contract: none is half-imported
        write_prepared(index.store, run)


MAX_ASV_GRID = 100_000
"""Parameter combinations one asv benchmark may have: asv's own suites have hundreds; past
this a result file is not one asv wrote for a benchmark anyone runs."""
_YEAR_2100_MS = 4_102_444_800_000
"""2100-01-01T00:00:00Z in milliseconds: the latest date a catalog line may carry."""


def asv_grid_size(params: list[Any]) -> int:
    """How many combinations `asv_combinations` would make, counted without making them."""
    return math.prod(len(values) for values in params if isinstance(values, list))


def asv_moment(date_ms: Any, path: Path) -> datetime:
    """A result file's `date` (ms since 1970, UTC) as a time; none (or not a number) is
    1970-01-01, as asv's own readers take it. A date
    before 1970 or after 2100 is one SchemaError naming the file (a catalog reader refuses
    such a stamp; `fromtimestamp` of 1e20 raises past any caller)."""
    if isinstance(date_ms, bool) or not isinstance(date_ms, (int, float)):
        return datetime.fromtimestamp(0, timezone.utc)
    if not 0 <= date_ms < _YEAR_2100_MS:
        shown = f"{date_ms:g}" if isinstance(date_ms, float) else str(date_ms)[:24]
        raise SchemaError(f"{path}: $.date: {shown} is not a time from 1970 to 2100; refused")
    return datetime.fromtimestamp(date_ms / 1000, timezone.utc)


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
) -> ImportedRun | None:
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
    spec = public_spec_id(machine, point.label, "asv", "import", raw)
    existing = index.find(machine, spec)
    if existing:
        report.unchanged.append(existing)
        return None
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
    given = None  # tok/s: the decode and peak figures, derived as a sweep's are
    if not point.throughput:
        given = {} if number is None else {asv_metric(point.unit): number}
    run = prepare_run(str(path), manifest, kernel, batch, raw, metrics=given)
    report.created.append(run_id)
    return run
