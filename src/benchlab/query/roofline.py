"""The roofline over catalog entries: MBU beside decode, the physics check, and the
prediction for a machine that never ran a model (ARCHITECTURE.md, "How close to the
hardware").

Judged when asked, from the entries and the machines' specs as they stand, not stored in
the catalog: a bandwidth declared or measured later applies to every run at once, measured,
imported and pulled alike, and no clone's stale figure travels in a shard line.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from benchlab.catalog.inventory import machine_specs
from benchlab.errors import BenchlabError, QueryError
from benchlab.machines.bandwidth import ceiling_bandwidth, label
from benchlab.machines.roofline import Judgement, Prediction, bytes_per_token, ceiling, judge
from benchlab.machines.roofline import predict as scale
from benchlab.metrics import DECODE

if TYPE_CHECKING:
    from benchlab.layout import Store
    from benchlab.models import MachineSpecs

DECODE = DECODE.name


def fleet_specs(store: Store) -> dict[str, MachineSpecs]:
    """Every machine's specs this clone can read (private, else public); none is fatal."""
    try:
        return machine_specs(store)
    except BenchlabError:
        return {}


def _on_gpu(entry: Mapping[str, Any]) -> bool:
    layers = entry.get("gpu_layers")
    return isinstance(layers, int) and layers > 0


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


def annotate(rows: Iterable[dict[str, Any]], specs: Mapping[str, MachineSpecs]) -> None:
    """Add `mbu_pct`, `ceiling_tok_per_sec` and `impossible` to rows that can be judged."""
    for row in rows:
        found = judge_entry(row, specs)
        if found is not None:
            row["mbu_pct"] = round(found.mbu_pct, 1)
            row["ceiling_tok_per_sec"] = round(found.ceiling_tok_per_sec, 1)
            row["impossible"] = found.impossible


def impossible_runs(
    entries: Iterable[Mapping[str, Any]], specs: Mapping[str, MachineSpecs]
) -> list[tuple[Mapping[str, Any], Judgement]]:
    """Every ok run whose decode claims more than its machine's bandwidth allows."""
    out = []
    for entry in entries:
        if entry.get("status", "ok") != "ok":
            continue
        found = judge_entry(entry, specs)
        if found is not None and found.impossible:
            out.append((entry, found))
    return out


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
    all_series: list[dict[str, Any]], by: str | None, specs: Mapping[str, MachineSpecs]
) -> tuple[list[dict[str, Any]], int]:
    """`bench best` by decode without the series whose level beats their machine's ceiling:
    from every series at its level (best first), annotated with MBU, the impossible ones
    dropped, then the best of each group as `by` asks. Returns the rows and how many series
    were set aside."""
    annotate(all_series, specs)
    possible = [row for row in all_series if not row.get("impossible")]
    key = {
        None: lambda row: None,
        "model": lambda row: row.get("model_id"),
        "machine": lambda row: row.get("machine_id"),
        "series": lambda row: row.get("series"),
    }[by]
    seen: set[Any] = set()
    out = []
    for row in possible:
        group = key(row)
        if group not in seen:
            seen.add(group)
            out.append(row)
    return out, len(all_series) - len(possible)
