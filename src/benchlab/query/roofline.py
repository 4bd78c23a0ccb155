"""The roofline over catalog entries: MBU beside decode, the physics check, and the
prediction for a machine that never ran a model (ARCHITECTURE.md, "How close to the
hardware").

Judged when asked, from the entries and the machines' specs as they stand, not stored in
the catalog: a bandwidth declared or measured later applies to every run at once, measured,
imported and pulled alike, and no clone's stale figure travels in a shard line.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from benchlab.catalog.inventory import machine_specs
from benchlab.errors import BenchlabError, QueryError
from benchlab.machines import compute
from benchlab.machines.bandwidth import ceiling_bandwidth, label
from benchlab.machines.roofline import (
    Judgement,
    Prediction,
    PrefillJudgement,
    bytes_per_token,
    ceiling,
    entry_bytes_per_token,
    entry_flops_per_token,
    judge,
    judge_prefill,
)
from benchlab.machines.roofline import predict as scale
from benchlab.metrics import DECODE as DECODE_METRIC
from benchlab.metrics import PREFILL as PREFILL_METRIC
from benchlab.query.level import first_of_each

if TYPE_CHECKING:
    from benchlab.layout import Store
    from benchlab.models import MachineSpecs

DECODE = DECODE_METRIC.name
PREFILL = PREFILL_METRIC.name
NOT_MEASURED = "not measured"
"""MBU (MFU) where the run has a decode and a size (a prefill and a parameter count) but its
machine no bandwidth (peak compute) figure: never 0."""


def fleet_specs(store: Store) -> dict[str, MachineSpecs]:
    """Every machine's specs this clone can read (private, else public); none is fatal."""
    try:
        return machine_specs(store)
    except BenchlabError:
        return {}


def _on_gpu(entry: Mapping[str, Any]) -> bool:
    """Whether the run offloaded its layers: llama-bench's `-ngl -1` (its default since 2025)
    offloads every layer, as `-ngl 99` did before."""
    layers = entry.get("gpu_layers")
    return isinstance(layers, int) and not isinstance(layers, bool) and layers != 0


def judge_entry(
    entry: Mapping[str, Any], specs: Mapping[str, MachineSpecs], decode: float | None = None
) -> Judgement | None:
    """One entry against its machine's ceiling (`decode`: a level to judge instead of the
    entry's own value); None where the machine has no figure or the run no decode or size."""
    machine = specs.get(str(entry.get("machine_id")))
    if machine is None:
        return None
    bound = ceiling_bandwidth(machine, on_gpu=_on_gpu(entry))
    if bound is None:
        return None
    judged = dict(entry) if decode is None else {**entry, DECODE: decode}
    return judge(judged, bound.figure.gbs, label(bound.figure))


def judge_prefill_entry(
    entry: Mapping[str, Any], specs: Mapping[str, MachineSpecs], prefill: float | None = None
) -> PrefillJudgement | None:
    """One entry's prefill against its machine's peak compute (`prefill`: a level to judge
    instead of the entry's own value); None where the machine has no figure or the run no
    prefill or parameter count."""
    machine = specs.get(str(entry.get("machine_id")))
    if machine is None:
        return None
    peak = compute.peak_compute(machine, on_gpu=_on_gpu(entry))
    if peak is None:
        return None
    judged = dict(entry) if prefill is None else {**entry, PREFILL: prefill}
    return judge_prefill(judged, peak.figure.tflops, compute.label(peak.figure))


def decode_level(row: Mapping[str, Any], metric: str = DECODE) -> float | None:
    """A ranked row's decode (or `metric`) at its series' current level (`levels`, or the
    `level` of a ranking by it), else the run's own: a level is what `best` shows, so MBU,
    MFU and the physics check judge the same number (ARCHITECTURE.md, How close to the
    hardware)."""
    level = row.get("level") or {}
    found = (row.get("levels") or {}).get(metric)
    if found is None and level.get("metric") == metric:
        found = level.get("value")
    if found is None:
        found = row.get(metric)
    return float(found) if isinstance(found, (int, float)) and found > 0 else None


def annotate(
    rows: Iterable[dict[str, Any]], specs: Mapping[str, MachineSpecs], metric: str = DECODE
) -> None:
    """Add `mbu_pct` (`mfu_pct` where `metric` is prefill), `ceiling_tok_per_sec` and
    `impossible` to rows that can be judged, at each row's level (`decode_level`)."""
    for row in rows:
        rate = decode_level(row, metric)
        if rate is None:
            continue
        if metric == PREFILL:
            compute_found = judge_prefill_entry(row, specs, rate)
            if compute_found is not None:
                row["mfu_pct"] = round(compute_found.mfu_pct, 1)
                row["ceiling_tok_per_sec"] = round(compute_found.ceiling_tok_per_sec, 1)
                row["impossible"] = compute_found.impossible
            continue
        found = judge_entry(row, specs, rate)
        if found is not None:
            row["mbu_pct"] = round(found.mbu_pct, 1)
            row["ceiling_tok_per_sec"] = round(found.ceiling_tok_per_sec, 1)
            row["impossible"] = found.impossible


def mbu_at(
    entry: Mapping[str, Any], specs: Mapping[str, MachineSpecs], decode: float | None = None
) -> float | str | None:
    """The entry's MBU in percent at `decode` (default: its own), to 0.1: None where the run
    has no decode or no bytes per token (no model size, or weights small enough to stay in
    cache: nothing to judge), `NOT_MEASURED` where its machine has
    no bandwidth figure for the memory the run read from."""
    value = entry.get(DECODE) if decode is None else decode
    if not isinstance(value, (int, float)) or value <= 0:
        return None
    if entry_bytes_per_token(entry) is None:
        return None
    found = judge_entry(entry, specs, float(value))
    return NOT_MEASURED if found is None else round(found.mbu_pct, 1)


def mfu_at(
    entry: Mapping[str, Any], specs: Mapping[str, MachineSpecs], prefill: float | None = None
) -> float | str | None:
    """The entry's MFU in percent at `prefill` (default: its own), to 0.1: None where the run
    has no prefill or no parameter count (nothing to judge), `NOT_MEASURED` where its
    machine has no peak compute figure for the processor the run computed on."""
    value = entry.get(PREFILL) if prefill is None else prefill
    if not isinstance(value, (int, float)) or value <= 0:
        return None
    if entry_flops_per_token(entry) is None:
        return None
    found = judge_prefill_entry(entry, specs, float(value))
    return NOT_MEASURED if found is None else round(found.mfu_pct, 1)


def judge_levels(
    rows: Iterable[dict[str, Any]], specs: Mapping[str, MachineSpecs], *, ever: bool
) -> None:
    """`bench table`: each row's `mbu_pct` (as `mbu_at`) at its decode level and `mfu_pct`
    (as `mfu_at`) at its prefill level, the run's own values with `ever`, and `impossible`
    where either could be judged (True where either beats physics, else None)."""
    for row in rows:
        levels = row if ever else (row.get("levels") or {})
        decode, prefill = levels.get(DECODE), levels.get(PREFILL)
        rate = float(decode) if isinstance(decode, (int, float)) else None
        mbu = mbu_at(row, specs, rate) if rate is not None else None
        row["mbu_pct"] = mbu
        found = judge_entry(row, specs, rate) if isinstance(mbu, float) and rate else None
        verdicts = [found.impossible] if found is not None and decode else []
        pp = float(prefill) if isinstance(prefill, (int, float)) else None
        mfu = mfu_at(row, specs, pp) if pp is not None else None
        row["mfu_pct"] = mfu
        compute_found = judge_prefill_entry(row, specs, pp) if isinstance(mfu, float) else None
        verdicts += [compute_found.impossible] if compute_found is not None else []
        row["impossible"] = any(verdicts) if verdicts else None


def json_mbu(value: Any) -> float | None:
    """`mbu_pct` for --format json: a number or null (not measured is no number)."""
    return value if isinstance(value, float) else None


Judged = TypeVar("Judged", Judgement, PrefillJudgement)


def _impossible(
    entries: Iterable[Mapping[str, Any]],
    specs: Mapping[str, MachineSpecs],
    judge: Callable[[Mapping[str, Any], Mapping[str, MachineSpecs]], Judged | None],
) -> list[tuple[Mapping[str, Any], Judged]]:
    """Every ok run that `judge` finds faster than its machine's bound allows."""
    out = []
    for entry in entries:
        if entry.get("status", "ok") != "ok":
            continue
        found = judge(entry, specs)
        if found is not None and found.impossible:
            out.append((entry, found))
    return out


def impossible_runs(
    entries: Iterable[Mapping[str, Any]], specs: Mapping[str, MachineSpecs]
) -> list[tuple[Mapping[str, Any], Judgement]]:
    """Every ok run whose decode claims more than its machine's bandwidth allows."""
    return _impossible(entries, specs, judge_entry)


def impossible_prefill_runs(
    entries: Iterable[Mapping[str, Any]], specs: Mapping[str, MachineSpecs]
) -> list[tuple[Mapping[str, Any], PrefillJudgement]]:
    """Every ok run whose prefill claims more than its machine's peak compute allows."""
    return _impossible(entries, specs, judge_prefill_entry)


def predict_decode(
    entries: Iterable[Mapping[str, Any]],
    specs: Mapping[str, MachineSpecs],
    machine: str,
    model: str,
) -> tuple[Prediction, float]:
    """Decode t/s of `model` on `machine`: its ceiling x the median MBU of the machines that
    ran the model (each machine's best ok run counts once, so a machine with many runs does
    not outvote the fleet). Returns the prediction and the bytes per token it used."""
    target = specs.get(machine)
    if target is None:
        raise QueryError(f"--predict {machine}: no specs for this machine (bench machines)")
    runs = [e for e in entries if e.get("model_id") == model and e.get("status", "ok") == "ok"]
    sizes = [e["model_size"] for e in runs if isinstance(e.get("model_size"), int)]
    if not sizes:
        raise QueryError(f"--model {model}: no ok run of this model states its size")
    per_token = bytes_per_token(int(statistics.median(sizes)), model=str(runs[0].get("model")))
    assert per_token is not None  # sizes are positive ints
    on_gpu = statistics.median(1 if _on_gpu(e) else 0 for e in runs) >= 0.5
    bound = ceiling_bandwidth(target, on_gpu=on_gpu and bool(target.hardware.gpu))
    if bound is None:
        raise QueryError(
            f"--predict {machine}: no memory bandwidth recorded "
            f"(bench machines measure, or bench machines set {machine} --mem-bandwidth GBPS)"
        )
    best: dict[str, float] = {}
    for entry in runs:
        if entry.get("machine_id") == machine:
            continue
        found = judge_entry(entry, specs)
        if found is not None and not found.impossible:
            held = best.get(str(entry["machine_id"]))
            best[str(entry["machine_id"])] = max(found.mbu_pct, held or 0.0)
    found_prediction = scale(ceiling(bound.figure.gbs, per_token), best.values())
    if found_prediction is None:
        raise QueryError(
            f"--model {model}: fewer than two other machines with a bandwidth figure ran it "
            "(a prediction needs the fleet's spread)"
        )
    return found_prediction, per_token


def within_physics(
    all_series: list[dict[str, Any]],
    by: str | None,
    specs: Mapping[str, MachineSpecs],
    metric: str = DECODE,
) -> tuple[list[dict[str, Any]], int]:
    """`bench best` by decode (or prefill) without the series whose level beats their
    machine's ceiling: from every series at its level (best first), annotated with MBU (or
    MFU), the impossible ones dropped, then the best of each group as `by` asks. Returns the
    rows and how many series were set aside."""
    annotate(all_series, specs, metric)
    possible = [row for row in all_series if not row.get("impossible")]
    keys: dict[str | None, Callable[[dict[str, Any]], Any]] = {
        None: lambda row: None,
        "model": lambda row: row.get("model_id"),
        "machine": lambda row: row.get("machine_id"),
        "series": lambda row: row.get("series"),
    }
    return first_of_each(possible, keys[by]), len(all_series) - len(possible)
