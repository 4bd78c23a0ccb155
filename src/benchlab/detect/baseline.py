"""The latest run of each series against its baseline (`bench regression`'s gate form), and
the threshold such a gate reads (ARCHITECTURE.md, Regression detection)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from statistics import median
from typing import Any

from benchlab.detect.cuts import segments
from benchlab.detect.history import REPORT_FIELDS, Entry, History, metric_histories, series_fields
from benchlab.errors import QueryError
from benchlab.identity import version_label
from benchlab.metrics import DEFAULT_METRIC, lower_is_better


@dataclass(frozen=True)
class Comparison:
    """The latest run of one series against its baseline, with both ends' versions."""

    series: str
    label: str
    metric: str
    baseline: str
    baseline_value: float
    baseline_version: str | None
    latest_run: str
    latest_value: float
    latest_version: str | None
    change: float
    regression: bool
    identity: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def as_row(self) -> dict[str, Any]:
        row = {name: self.identity.get(name) for name in REPORT_FIELDS}
        row.update(
            series=self.series,
            label=self.label,
            metric=self.metric,
            baseline=self.baseline,
            baseline_value=self.baseline_value,
            baseline_version=self.baseline_version,
            latest_run=self.latest_run,
            latest_value=self.latest_value,
            latest_version=self.latest_version,
            change=self.change,
            regression=self.regression,
        )
        return row


def compare_latest(
    entries: Sequence[Entry],
    machine: str,
    *,
    baseline_run: str | None = None,
    threshold: float = 0.05,
    metric: str | Sequence[str] | None = DEFAULT_METRIC,
    window: int = 5,
) -> list[Comparison]:
    """The latest run of each series on `machine` against a baseline in the same series.

    The baseline is the given run (its series only) or else the median of the last stable
    segment before the newest runs (`segments`): after a step, even one many runs ago, the
    runs since are already at the new level, and the median of the last few of them would
    call a regression still in effect "no change". Where the history has one segment, the
    baseline is the median of its runs before the latest, so one lucky or unlucky run does
    not become the yardstick. `window` is accepted for older callers and unused. A series
    with a single run has nothing to compare with and is left out: a fresh clone's first
    sweep (threads 1 and 2, two models, two precisions) is eight one-run series, not a
    comparison of a t1 run with a t2 run. Several metrics (`metrics.HEADLINE_ORDER`): each
    series is compared in the first it has; None: in every metric it carries
    (`metric_histories`), so a regression in prefill alone fails the gate.
    """
    measured = [
        (name, runs)
        for name, runs in metric_histories(entries, metric)
        if runs[0][0]["machine_id"] == machine
    ]
    if not measured:
        named = (
            "any metric"
            if metric is None
            else metric
            if isinstance(metric, str)
            else " or ".join(metric)
        )
        raise QueryError(f"no ok runs with {named} on machine {machine!r}")
    if baseline_run is not None:
        owner = [
            (name, runs)
            for name, runs in measured
            if any(e["run_id"] == baseline_run for e, _ in runs)
        ]
        if not owner:
            raise QueryError(f"baseline run {baseline_run!r} is not an ok run on {machine!r}")
        measured = owner
    results = []
    for series_metric, runs in measured:
        latest_entry, latest_value = runs[-1]
        if baseline_run is not None:
            base_entry, base_value = next((e, v) for e, v in runs if e["run_id"] == baseline_run)
            base_label = baseline_run
            base_version = version_label(base_entry)
        elif len(runs) >= 2:
            previous = _stable_baseline(runs)
            base_value = median(v for _, v in previous)
            base_label = f"median of {len(previous)} run(s) of the last stable segment"
            versions = sorted({version_label(e) or "" for e, _ in previous})
            base_version = ", ".join(v for v in versions if v) or None
        else:
            continue
        change = (latest_value - base_value) / base_value if base_value else 0.0
        worse = change > threshold if lower_is_better(series_metric) else change < -threshold
        fields = series_fields(latest_entry)
        results.append(
            Comparison(
                fields["series"],
                fields["label"],
                series_metric,
                base_label,
                base_value,
                base_version,
                latest_entry["run_id"],
                latest_value,
                version_label(latest_entry),
                change,
                worse,
                identity=fields,
            )
        )
    return results


def _stable_baseline(runs: History) -> History:
    """The runs of the last stable segment before the newest one (`segments`); with a
    single segment, all its runs before the latest."""
    found = segments([value for _, value in runs])
    if len(found) >= 2:
        start, end = found[-2]
        return runs[start:end]
    return runs[:-1]


def parse_threshold(text: str, flag: str = "--threshold") -> float:
    """A relative change from `5%` or `0.05` (the same thing).

    A bare number of 1 or more is refused rather than guessed: `--threshold 5` read as a
    fraction is 500 %, so a CI gate would pass every regression in silence; read as 5 % it
    would surprise whoever meant a fraction. Saying which one takes a `%` or a leading `0.`.
    """
    raw = text.strip()
    try:
        percent = raw.endswith("%")
        value = float(raw[:-1]) / 100 if percent else float(raw)
    except ValueError:
        raise QueryError(
            f"{flag} {text!r}: expected a percentage such as 5% or a fraction such as 0.05"
        ) from None
    if not math.isfinite(value) or value < 0:
        raise QueryError(f"{flag} {text!r}: expected a change of 0 or more, such as 5% or 0.05")
    if not percent and value >= 1:
        raise QueryError(
            f"{flag} {text!r} is ambiguous: write {raw}% for {raw} percent "
            f"or {value / 100:g} as a fraction"
        )
    if value >= 10:
        raise QueryError(f"{flag} {text!r}: out of range (at most 1000%)")
    return value
