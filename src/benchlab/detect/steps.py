"""One history's steps as records: the cuts and the suspect of `cuts`, and the one-run
excursions of `noise`, each a `Step` with its size, its first bad run, the versions either
side, a confidence, and `open` when it is still in effect at the newest run (ARCHITECTURE.md,
Regression detection). So every step is reported: a regression, the fix that undid it, a
later one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from statistics import median
from typing import Any, Literal

from benchlab.detect.cuts import (
    DEFAULTS,
    MIN_BASELINE,
    Thresholds,
    effect_size,
    noise_scale,
    tail_step,
)
from benchlab.detect.history import REPORT_FIELDS, Entry, History, series_fields
from benchlab.detect.noise import demode, excursions
from benchlab.detect.repeats import floored_steps, within_floor
from benchlab.identity import version_label
from benchlab.metrics import lower_is_better

Status = Literal["confirmed", "suspect", "outlier"]


@dataclass(frozen=True)
class Step:
    """A step change in one series: where it starts, how big it is, how sure we are, and
    the version axis either side of it (a build change inside the series is named here)."""

    series: str
    label: str
    metric: str
    first_bad_run: str
    first_bad_timestamp: str
    last_good_run: str
    before: float
    after: float
    change: float
    confidence: float
    kind: Literal["regression", "improvement"]
    version_before: str | None = None
    version_after: str | None = None
    revision_before: str | None = None
    revision_after: str | None = None
    identity: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    status: Status = "confirmed"
    """confirmed; suspect (too few runs after it); outlier (one run that came back: a
    `noise.excursions` run, shown but never a step of the level)."""
    runs_after: int = 0
    effect: float = 0.0
    corroborated_by: int = 0
    open: bool = False
    """Still in effect at the newest run: every segment since the step, the newest included,
    stays on the far side of the level before it by more than the noise, `min_change` and
    half the step (no later step undid most of it). A regression later fixed is not open,
    even if a new regression follows; a suspect, at the newest runs, is."""
    p_value: float = 1.0
    """The step's own p-value (confidence is 1 - p_value, clipped by corroboration);
    `control_fdr` ranks series by it."""

    @property
    def version_changed(self) -> bool:
        return (self.version_before, self.revision_before) != (
            self.version_after,
            self.revision_after,
        )

    def as_row(self) -> dict[str, Any]:
        row = {name: self.identity.get(name) for name in REPORT_FIELDS}
        row.update(
            series=self.series,
            label=self.label,
            metric=self.metric,
            kind=self.kind,
            first_bad_run=self.first_bad_run,
            first_bad_timestamp=self.first_bad_timestamp,
            last_good_run=self.last_good_run,
            before=self.before,
            after=self.after,
            change=self.change,
            confidence=self.confidence,
            version_before=self.version_before,
            version_after=self.version_after,
            revision_before=self.revision_before,
            revision_after=self.revision_after,
            version_changed=self.version_changed,
            status=self.status,
            runs_after=self.runs_after,
            effect=round(self.effect, 2),
            corroborated_by=self.corroborated_by,
            open=self.open,
        )
        return row


def step_kind(metric: str, change: float) -> Literal["regression", "improvement"]:
    """A step is a regression when it moves against the metric's declared direction: a
    throughput going down, a latency, memory or energy figure going up."""
    worse = change > 0 if lower_is_better(metric) else change < 0
    return "regression" if worse else "improvement"


def series_steps(
    runs: History, metric: str, limits: Thresholds = DEFAULTS, *, suspects: bool = True
) -> list[Step]:
    """The steps of one series' history (`detect` without the catalog-wide parts)."""

    fields = series_fields(runs[0][0])
    floor = within_floor(runs, metric)  # a short history's noise: at least its repeats'
    values, gap = demode([value for _, value in runs])
    outliers = excursion_steps(runs, values, metric, limits.min_change, fields)
    if outliers:  # judged without them: a run that dipped and came back is no step
        left_out = {step.first_bad_run for step in outliers}
        kept = [i for i, (entry, _) in enumerate(runs) if entry["run_id"] not in left_out]
        runs, values = [runs[i] for i in kept], [values[i] for i in kept]
    if gap is not None:
        fields["bimodal_gap"] = round(gap, 4)
    cuts = floored_steps(floor, values, **limits.keywords())
    bounds = [0, *(cut for cut, _ in cuts), len(values)]
    found: list[tuple[int, float, float, float, float, Status]] = []
    for number, (cut, p_value) in enumerate(cuts, start=1):
        segment_before = values[bounds[number - 1] : cut]
        segment_after = values[cut : bounds[number + 1]]
        found.append(
            (
                cut,
                p_value,
                median(segment_before),
                median(segment_after),
                effect_size(segment_before, segment_after),
                "confirmed",
            )
        )
    levels = [(lo, median(values[lo:hi])) for lo, hi in pairwise(bounds)]
    if suspects:
        tail = tail_step(
            values, bounds[-2], min_change=limits.min_change, min_tail=1, noise_floor=floor
        )
        if tail is not None and _seen_before(tail[0], bounds[-2], runs, values, outliers):
            tail = None  # a run that dipped as far and came back: the newest may too
        if tail is not None and tail[0] - bounds[-2] >= MIN_BASELINE:
            first, p_value, effect = tail
            found.append(
                (
                    first,
                    p_value,
                    median(values[bounds[-2] : first]),
                    median(values[first:]),
                    effect,
                    "suspect",
                )
            )
            levels[-1:] = [(levels[-1][0], found[-1][2]), (first, found[-1][3])]
    noise = max(noise_scale(values), floor)
    steps = []
    for cut, p_value, before, after, effect, status in found:
        margin = max(
            limits.min_change * abs(before), limits.min_effect * noise, abs(after - before) / 2
        )
        later = [level for start, level in levels if start >= cut]
        steps.append(
            _step_at(
                runs,
                cut,
                metric,
                fields,
                (before, after, p_value, effect),
                status=status,
                is_open=_still_open(before, after, later, margin),
                confirmed_in_series=len(cuts),
            )
        )
    return steps + outliers


def _seen_before(
    first: int, start: int, runs: History, values: Sequence[float], outliers: Sequence[Step]
) -> bool:
    """Whether an excursion left out of the history between `start` and the tail at
    `first` went as far as the tail does: the tail check asks whether the newest runs lie
    beyond every run since the last step, and an excursion is still a run of that stretch."""
    if not outliers:
        return False
    lo, hi = runs[start][0]["timestamp"], runs[first][0]["timestamp"]
    tail = values[first:]
    down = median(tail) < median(values[start:first])
    for step in outliers:
        if lo <= step.first_bad_timestamp < hi:
            if (step.after <= max(tail)) if down else (step.after >= min(tail)):
                return True
    return False


def excursion_steps(
    runs: History, values: Sequence[float], metric: str, min_change: float, fields: Entry
) -> list[Step]:
    """The one-run excursions of a history (`noise.excursions`) as `outlier` steps: shown
    with the run, its size against the runs around it and a confidence, never confirmed,
    never open, never a gate failure; the history is segmented without them. The noise is
    at least the repeats' (`repeats.within_floor`)."""
    sigma = max(noise_scale(values), within_floor(runs, metric))
    out = []
    n = len(values)
    for i in excursions(values, sigma, min_change):
        around = sorted([*values[max(0, i - 2) : i], *values[i + 1 : i + 3]])
        before = median(around)
        z = abs(values[i] - before) / sigma
        p_value = min(1.0, n * math.erfc(z / math.sqrt(2)))
        out.append(
            _step_at(runs, i, metric, fields, (before, values[i], p_value, z), status="outlier")
        )
    return out


def _step_at(
    runs: History,
    at: int,
    metric: str,
    fields: Entry,
    sizes: tuple[float, float, float, float],
    *,
    status: Status,
    is_open: bool = False,
    confirmed_in_series: int | None = None,
) -> Step:
    """The step whose first bad run is `runs[at]`: `sizes` (level before, level after,
    p-value, effect), the versions of the runs either side of it."""
    before, after, p_value, effect = sizes
    good, bad = runs[at - 1][0], runs[at][0]
    change = (after - before) / before
    identity = {**fields, "last_good_timestamp": good["timestamp"]}
    if confirmed_in_series is not None:
        identity["confirmed_in_series"] = confirmed_in_series
    return Step(
        fields["series"],
        fields["label"],
        metric,
        bad["run_id"],
        bad["timestamp"],
        good["run_id"],
        before,
        after,
        change,
        1.0 - p_value,
        step_kind(metric, change),
        version_before=version_label(good),
        version_after=version_label(bad),
        revision_before=good.get("revision"),
        revision_after=bad.get("revision"),
        identity=identity,
        status=status,
        runs_after=len(runs) - at,
        effect=effect,
        open=is_open,
        p_value=p_value,
    )


def _still_open(before: float, after: float, later: Sequence[float], margin: float) -> bool:
    """A step is open while every segment since it stays beyond `margin` on its side of the
    level before it: once a later step undoes it (a fix), it stays fixed, even if a new
    regression later takes the level there again (that one is a step of its own)."""
    side = math.copysign(1.0, after - before)
    return all((level - before) * side > margin for level in later)
