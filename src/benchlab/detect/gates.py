"""Gates: a sweep's declared pass/fail conditions on a metric, and their verdicts on runs.

A sweep declares gates (`gates:` in its YAML, models.GateConfig): a metric, bounds on it
and/or a minimum speedup over a baseline (a run id, or `previous`: the newest earlier ok run
of the same series). `evaluate` is the one pure rule. `GateBook` finds each run's gates and
baseline in the store and writes the verdict into the run's `manifest.json` (`gate`) and
`gate.json` (an optional run file: ARCHITECTURE.md, The run files).

Why here and not in the attempt: the manifest is written by sweep/attempt.py when a point
finishes, and a baseline of `previous` needs the series' history, which the attempt does not
read. So verdicts are written after the sweep, from what is already on disk: by
`bench run --publish` (for the sweep just run), by `bench regression --gates` (for every run
of the store), and read (not written) by the onboarding checklist. Re-evaluating is cheap and
idempotent: a manifest is rewritten only when its verdict changed.
"""

from __future__ import annotations

import bisect
import logging
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from benchlab.errors import BenchlabError, ConfigError
from benchlab.identity import series_key
from benchlab.layout import MANIFEST, RECORD, SWEEP_STATE, read_json, read_model, write_model
from benchlab.metrics import HEADLINE_ORDER, PEAK, lower_is_better
from benchlab.models import GateConfig, GateInfo, RunManifest, SweepConfig
from benchlab.runtime.bounded_yaml import read_config_data

if TYPE_CHECKING:
    from benchlab.layout import Store

log = logging.getLogger(__name__)

GATE_FILE = "gate.json"
PREVIOUS = "previous"
PASSED, FAILED, UNKNOWN = "passed", "failed", "unknown"

DEFAULT_GATE = GateConfig(
    name="default",
    metric=PEAK.name,
    min_speedup=0.5,
    baseline=PREVIOUS,
)
"""The gate of a run whose sweep declares none (the onboarding checklist's): the run yields
its headline metric, and it is at least half of the previous run of its series. It catches a
point that measured nothing and a machine that halved its speed since the last run."""


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def default_gates(
    gate: GateConfig, metrics: Mapping[str, Any], declared: Iterable[str] = ()
) -> list[GateConfig]:
    """`gate` (the default) on every metric the run yields of the headline order
    (`metrics.HEADLINE_ORDER`: peak aggregate, decode, prefill) and of those its config
    declares (a `command` benchmark of requests/s or milliseconds): each metric is its own
    history (ARCHITECTURE.md, Regression detection), so a prefill that halved fails the gate
    of a llama-bench run whose decode held. A run with none of them keeps `gate` (on a
    metric it cannot have, its verdict says "unknown"). With several, each is named after
    its metric, so a failed verdict says which."""
    present = [m for m in (*HEADLINE_ORDER, *declared) if _number(metrics.get(m)) is not None]
    present = list(dict.fromkeys(present))
    if not present:
        return [gate]
    if len(present) == 1:
        return [
            gate if present[0] == gate.metric else gate.model_copy(update={"metric": present[0]})
        ]
    return [
        gate.model_copy(update={"metric": m, "name": f"{gate.name or 'default'} {m}"})
        for m in present
    ]


def _speedup(metric: str, value: float, base_value: float, lower: bool | None = None) -> float:
    """How many times better than its baseline a run is, in the metric's direction: a
    throughput's ratio, a latency's (or memory's, energy's) inverse ratio, so a latency that
    doubled is a 0.5x speedup and fails `min_speedup: 0.95` as a halved throughput does.
    `lower` is the direction a run's config declares; None: the registry's."""
    if not (lower_is_better(metric) if lower is None else lower):
        return value / base_value
    return base_value / value if value > 0 else math.inf


def evaluate(
    gate: GateConfig,
    metrics: Mapping[str, Any],
    baseline_metrics: Mapping[str, Any] | None,
    *,
    baseline_run: str | None = None,
    lower: bool | None = None,
) -> GateInfo:
    """The verdict of one gate on one run's metrics; pure.

    `baseline_metrics` is the baseline run's metrics, or None when the gate has no baseline
    or none was found. A missing `previous` is not a failure (the first run of a series sets
    the baseline); a named baseline run that is missing is `unknown`, as is a run without
    the metric: "could not check" is kept apart from "failed". `lower` says the metric's
    direction where the run's config declares it (ARCHITECTURE.md, Metrics); None: the
    registry's.
    """
    info = GateInfo(
        name=gate.name or gate.metric,
        required=gate.required,
        metric=gate.metric,
        min=gate.min,
        max=gate.max,
        min_speedup=gate.min_speedup,
        baseline=gate.baseline,
    )
    value = _number(metrics.get(gate.metric))
    if value is None:
        return info.model_copy(
            update={"status": UNKNOWN, "detail": f"the run has no {gate.metric}"}
        )
    problems: list[str] = []
    notes: list[str] = []
    if gate.min is not None and value < gate.min:
        problems.append(f"{gate.metric} {value:g} < min {gate.min:g}")
    if gate.max is not None and value > gate.max:
        problems.append(f"{gate.metric} {value:g} > max {gate.max:g}")
    speedup: float | None = None
    base_value: float | None = None
    if gate.min_speedup is not None:
        if gate.baseline is None:
            speedup = value  # the metric is itself a speedup
        elif baseline_metrics is None:
            if gate.baseline != PREVIOUS:
                return info.model_copy(
                    update={
                        "status": UNKNOWN,
                        "value": value,
                        "detail": f"baseline run {gate.baseline} not found",
                    }
                )
            notes.append("first run of its series: no previous run to compare with")
        else:
            base_value = _number(baseline_metrics.get(gate.metric))
            if base_value is None or base_value <= 0:
                return info.model_copy(
                    update={
                        "status": UNKNOWN,
                        "value": value,
                        "baseline_run": baseline_run,
                        "detail": f"baseline run {baseline_run} has no positive {gate.metric}",
                    }
                )
            speedup = _speedup(gate.metric, value, base_value, lower)
        if speedup is not None and speedup < gate.min_speedup:
            problems.append(f"speedup {speedup:.3g} < min_speedup {gate.min_speedup:g}")
    return info.model_copy(
        update={
            "status": FAILED if problems else PASSED,
            "value": value,
            "actual_speedup": None if speedup is None else round(speedup, 4),
            "baseline_run": baseline_run,
            "baseline_value": base_value,
            "detail": "; ".join(problems or notes) or None,
        }
    )


def combine(verdicts: list[GateInfo]) -> GateInfo:
    """One run's overall verdict: failed if a required gate failed, unknown if one could not
    be checked, else passed. A single gate is its own verdict; several keep theirs in
    `checks`."""
    if len(verdicts) == 1:
        return verdicts[0]
    required = [v for v in verdicts if v.required]
    statuses = {v.status for v in required}
    status = FAILED if FAILED in statuses else UNKNOWN if UNKNOWN in statuses else PASSED
    bad = [f"{v.name}: {v.detail}" for v in verdicts if v.status != PASSED and v.detail]
    return GateInfo(
        name="all",
        required=bool(required),
        status=status,
        detail="; ".join(bad) or None,
        checks=verdicts,
    )


def shown(verdict: GateInfo) -> GateInfo:
    """The check a one-line report shows: the first that did not pass, else the first."""
    checks = verdict.checks or [verdict]
    return next((c for c in checks if c.status != PASSED), checks[0])


def applies(gate: GateConfig, record: Mapping[str, Any]) -> bool:
    """Whether a gate covers this run (its optional model and device filters)."""
    spec = record.get("spec") or {}
    if gate.model is not None and gate.model != spec.get("model"):
        return False
    return gate.device is None or gate.device == record.get("device")


def _slim(record: dict[str, Any]) -> dict[str, Any]:
    """What a verdict reads of a record: a catalog build holds a machine's records at once,
    and their samples and system facts would cost it most of its memory."""
    spec = record.get("spec")
    timings = record.get("timings")
    slim = {k: record.get(k) for k in _KEPT}
    slim["spec"] = {"model": spec.get("model")} if isinstance(spec, dict) else None
    started = timings.get("started_at") if isinstance(timings, dict) else None
    slim["timings"] = {"started_at": started}
    params = spec.get("params") if isinstance(spec, dict) else None
    declared = params.get("metrics") if isinstance(params, dict) else None
    slim["declared"] = (
        {str(n): d.get("better") for n, d in declared.items() if isinstance(d, dict)}
        if isinstance(declared, dict)
        else {}
    )
    return slim


_KEPT = ("run_id", "machine_id", "status", "experiment", "identity", "metrics", "device")


@dataclass(frozen=True)
class Verdict:
    """A run's verdict, where it lives, and whether this evaluation changed it on disk."""

    run_id: str
    machine_id: str
    experiment: str | None
    series: tuple[Any, ...]
    started_at: str
    gate: GateInfo
    written: bool = False


def declared_gates(path: Path) -> SweepConfig:
    """The sweep config at `path` as far as its gates need: read within bounds and validated
    by the model, without the sweep's cross-checks of its matrix and devices (they held when
    the sweep ran, and they belong to `sweep.config`, a floor above this one)."""
    data = read_config_data(path)
    try:
        return SweepConfig.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        raise ConfigError(f"{path}: {where}: {first['msg']}") from None


class GateBook:
    """The store's ok runs (one machine's, or all), their sweeps' gates, and their baselines.

    Reads run records once; the sweep config of an experiment comes from the caller, or from
    the path its `state.json` recorded (resolved from the working directory, then from the
    repository root above the store).
    """

    def __init__(
        self,
        store: Store,
        *,
        machine_id: str | None = None,
        configs: Mapping[str, SweepConfig] | None = None,
        default: GateConfig | None = None,
    ) -> None:
        self.store = store
        self.default = default
        self._configs: dict[str, SweepConfig | None] = dict(configs or {})
        self.warnings: list[str] = []
        pattern = f"{machine_id}/*/{RECORD}" if machine_id else f"*/*/{RECORD}"
        self.records: dict[str, dict[str, Any]] = {}
        self.dirs: dict[str, Path] = {}
        self._by_series: dict[tuple[Any, ...], list[tuple[str, str, dict[str, Any]]]] | None
        self._by_series, self._indexed = None, self.records
        self._keys: dict[str, tuple[Any, ...]] = {}
        if store.by_machine.is_dir():
            for path in sorted(store.by_machine.glob(pattern)):
                try:
                    record = read_json(path)
                except BenchlabError as exc:
                    self.warnings.append(str(exc))
                    continue
                if isinstance(record, dict) and record.get("status") == "ok":
                    self.records[str(record.get("run_id"))] = _slim(record)
                    self.dirs[str(record.get("run_id"))] = path.parent

    def gates_of(self, experiment: str | None) -> list[GateConfig]:
        """The gates an experiment declares ([] when its config cannot be found)."""
        if experiment is None:
            return []
        if experiment not in self._configs:
            self._configs[experiment] = self._load_config(experiment)
        config = self._configs[experiment]
        return list(config.gates) if config is not None else []

    def _load_config(self, experiment: str) -> SweepConfig | None:
        state_path = self.store.sweep_dir(experiment) / SWEEP_STATE
        try:
            state = read_json(state_path) if state_path.is_file() else {}
        except BenchlabError:
            state = {}
        named = state.get("config_path") if isinstance(state, dict) else None
        if not named or str(named).startswith("<"):
            return None  # a command-line point (bench run --machine-id ...) has no config
        candidates = [Path(named)]
        if not Path(named).is_absolute():
            candidates.append(self.store.root.parent.parent / named)
        for path in candidates:
            if path.is_file():
                try:
                    return declared_gates(path)
                except BenchlabError as exc:
                    self.warnings.append(f"gates of {experiment}: {exc}")
                    return None
        self.warnings.append(f"gates of {experiment}: sweep config {named} not found")
        return None

    def _series(self, record: Mapping[str, Any]) -> tuple[Any, ...]:
        """The run's series, computed once per run id (a verdict asks it several times)."""
        run_id = str(record.get("run_id"))
        key = self._keys.get(run_id)
        if key is None:
            key = self._keys[run_id] = series_key(record.get("identity") or {})
        return key

    @staticmethod
    def _started(record: Mapping[str, Any]) -> str:
        return str((record.get("timings") or {}).get("started_at") or "")

    def baseline(self, gate: GateConfig, record: Mapping[str, Any]) -> dict[str, Any] | None:
        """The baseline run's record for this gate and run, or None."""
        if gate.baseline is None:
            return None
        if gate.baseline != PREVIOUS:
            found = self.records.get(gate.baseline)
            if found is None:
                paths = list(self.store.by_machine.glob(f"*/{gate.baseline}/{RECORD}"))
                try:
                    found = read_json(paths[0]) if paths else None
                except BenchlabError:
                    found = None
            return found if isinstance(found, dict) and found.get("status") == "ok" else None
        history = self._history().get(self._series(record), [])
        at = bisect.bisect_left(history, (self._started(record), str(record.get("run_id"))))
        return history[at - 1][2] if at > 0 else None

    def _history(self) -> dict[tuple[Any, ...], list[tuple[str, str, dict[str, Any]]]]:
        """Each series' ok runs as (started, run id, record), oldest first: made once, so a
        `previous` baseline is a bisection, not a pass over every record (a catalog build
        judges thousands of runs of one machine)."""
        if self._by_series is None or self._indexed is not self.records:
            by_series: dict[tuple[Any, ...], list[tuple[str, str, dict[str, Any]]]] = {}
            for run_id, other in self.records.items():
                by_series.setdefault(self._series(other), []).append(
                    (self._started(other), str(other.get("run_id", run_id)), other)
                )
            for runs in by_series.values():
                runs.sort(key=lambda item: (item[0], item[1]))
            self._by_series, self._indexed = by_series, self.records
        return self._by_series

    def verdict(self, run_id: str) -> Verdict | None:
        """The verdict on one ok run (None when no gate applies to it)."""
        record = self.records[run_id]
        gates = [g for g in self.gates_of(record.get("experiment")) if applies(g, record)]
        metrics = record.get("metrics") or {}
        if not gates and self.default is not None:
            gates = default_gates(self.default, metrics, record.get("declared") or {})
        if not gates:
            return None
        verdicts = []
        for gate in gates:
            base = self.baseline(gate, record)
            better = (record.get("declared") or {}).get(gate.metric)
            verdicts.append(
                evaluate(
                    gate,
                    metrics,
                    None if base is None else base.get("metrics") or {},
                    baseline_run=None if base is None else str(base.get("run_id")),
                    lower=None if better is None else better == "lower",
                )
            )
        return Verdict(
            run_id=run_id,
            machine_id=str(record.get("machine_id")),
            experiment=record.get("experiment"),
            series=self._series(record),
            started_at=self._started(record),
            gate=combine(verdicts),
        )

    def verdicts(self, run_ids: Iterable[str] | None = None) -> list[Verdict]:
        """Verdicts for the given runs (default: all), oldest first."""
        wanted = self.records if run_ids is None else [r for r in run_ids if r in self.records]
        found = [v for v in (self.verdict(run_id) for run_id in wanted) if v is not None]
        return sorted(found, key=lambda v: (v.started_at, v.run_id))

    def write(self, verdict: Verdict) -> Verdict:
        """Put the verdict into the run's manifest and gate.json; only when it changed."""
        run_dir = self.dirs[verdict.run_id]
        manifest = read_model(run_dir / MANIFEST, RunManifest)
        if manifest.gate == verdict.gate and (run_dir / GATE_FILE).is_file():
            return verdict
        # No link on the way (ARCHITECTURE.md, One reader and one writer path).
        root = self.store.root
        write_model(run_dir / GATE_FILE, verdict.gate, root=root)
        write_model(
            run_dir / MANIFEST, manifest.model_copy(update={"gate": verdict.gate}), root=root
        )
        return Verdict(**{**verdict.__dict__, "written": True})


def apply_gates(
    store: Store,
    *,
    experiment: str | None = None,
    config: SweepConfig | None = None,
    machine_id: str | None = None,
) -> tuple[list[Verdict], list[str]]:
    """Evaluate the declared gates of the store's ok runs and write each verdict.

    With `config`, its experiment's runs use its gates (the sweep just run). Returns the
    verdicts (oldest first) and warnings (an unreadable record, a sweep config not found).
    """
    configs = {config.experiment: config} if config is not None else {}
    book = GateBook(store, machine_id=machine_id, configs=configs)
    if experiment is not None:
        book.records = {k: r for k, r in book.records.items() if r.get("experiment") == experiment}
    verdicts = [book.write(v) for v in book.verdicts()]
    return verdicts, book.warnings


def latest_per_series(verdicts: list[Verdict]) -> list[Verdict]:
    """The newest verdict of each series: what a CI gate judges (an old failure that a newer
    run fixed does not fail the build forever)."""
    newest: dict[tuple[Any, ...], Verdict] = {}
    for verdict in verdicts:  # oldest first, so the last one wins
        newest[verdict.series] = verdict
    return sorted(newest.values(), key=lambda v: (v.machine_id, v.run_id))
