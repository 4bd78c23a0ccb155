"""Regression detection over run history: latest-versus-baseline checks and step detection.

Step detection segments each series' *whole* history (`benchlab.detect.segment`: noise scale from
trimmed first differences, outlier runs clipped to the running median, optimal partitioning
with a penalty per cut, then a test per cut against its neighbouring segments: a z-test
with the series' own noise and a Bonferroni factor for the places the cut could have been,
a minimum size in noise deviations and in relative change, no drift that a straight line
explains). So every step is reported: a regression, the fix that undid it, a later one;
each with its size, its first bad run, the versions either side and a confidence, and
`open` when it is still in effect at the newest run. Ties between neighbouring cut places
go to the one that explains the larger change, so a noise-low run just before a drop does
not take the blame (a rank scan, by ranks alone, gave it). asv's detector is the same family
(a penalised L1 fit, `solve_potts_autogamma`) without a confidence; tools/perf/regress.py
scores both on the same generated histories (ARCHITECTURE.md, Regression detection).

A series is `identity.series_key`: the whole measurement identity less the version axis
(backend version, build, commit, revision). So a run at two threads never joins the history
of the same run at one thread, and a new llama.cpp build or a new revision of the thing under
test shows up as a step inside its series, reported with the version before and after it.
Entries are the catalog reader's plain dicts (`catalog.read.load_catalog`); runs marked as
outliers (`stats.is_outlier`) never enter a history.

Three guards keep the report honest at fleet scale, where hundreds of short series are
tested at once. The false discovery rate is kept at `alpha` across all the series of the
catalog (`control_fdr`: Benjamini-Hochberg over the series' p-values), so a few chance dips
among hundreds of noise-only series do not each become a confirmed regression. Every
threshold is in units of the series' own noise, so a noisy series needs a larger step. And
a step too recent to hold `min_segment` runs after it is not dropped: the *tail check*
asks whether the newest runs (two at least) all lie beyond every run since the last step,
by more than `suspect_effect` robust deviations, and reports it as `suspect` with the exact
probability of that ordering by chance. Suspects of one machine that start together (a new
driver, a thermal problem) corroborate each other: their p-values are combined by Fisher's
method, and the confidence says so.

The rank scan with a permutation test (`best_split`) remains for callers that want one
split's exact, distribution-free p-value.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import pairwise
from statistics import median
from typing import Any, Literal, TypeGuard

from benchlab.detect.noise import demode, excursions
from benchlab.detect.repeats import floored_steps, within_floor
from benchlab.detect.segment import find_cuts, segment_bounds
from benchlab.detect.segment import noise_scale as scale
from benchlab.detect.stats import is_outlier
from benchlab.errors import QueryError
from benchlab.identity import series_label, series_of, version_label
from benchlab.metrics import (
    CATALOG_METRICS,
    DEFAULT_METRIC,
    DERIVED_FROM,
    HEADLINE_ORDER,
    declared_metrics,
    lower_is_better,
)

REPORT_FIELDS = ("machine_id", "model", "precision", "backend", "mode", "threads")
"""The identity fields a report row repeats as columns; `series` and `label` name the rest."""

Entry = Mapping[str, Any]
History = list[tuple[Entry, float]]

MIN_EFFECT = 2.5
"""A confirmed step moves the segment mean by at least this many deviations of the series'
own noise (`segment.noise_scale`). At 1.5, chance runs of one mode of bimodal noise and
clusters of wedged runs became steps on the generated histories of tools/perf/regress.py
(up to 1.7 per 100 noise-only series); at 2.5, none in five draws, for 2 points of recall."""
SUSPECT_EFFECT = 4.0
"""A suspect (too few runs after it to confirm) must stand this far outside the noise."""
MIN_BASELINE = 4
"""Runs since the last step that a tail check needs as its baseline."""
MAX_TAIL = 5
"""The most newest runs the tail check looks at."""
MIN_TAIL = 2
"""The fewest runs of a suspect that stands alone: one newest run beyond the rest is as often
a wedged run as a step (on the generated histories of tools/perf/regress.py, most
single-run suspects were noise); `corroborate` keeps a single-run suspect only when other
series of its machine stepped with it."""


def sort_key(entry: Entry) -> tuple[str, str]:
    """Series in reading order: by label, then by id (two series may share a label when
    they differ only in a field the label leaves out, such as the KV cache types)."""
    return (series_label(entry), series_of(entry))


def histories(entries: Iterable[Entry], metric: str = DEFAULT_METRIC) -> dict[str, History]:
    """Ok runs with a value for `metric`, by series id (`series_of`), oldest first; the
    series come in `sort_key` order. Runs marked as outliers (`stats.is_outlier`) are left
    out: no answer ranks, averages or detects with them."""
    grouped: dict[str, History] = defaultdict(list)
    for entry in entries:
        value = entry.get(metric)
        if (
            entry.get("status", "ok") == "ok"
            and not is_outlier(entry)
            and isinstance(value, (int, float))
            and not isinstance(value, bool)
            and math.isfinite(value)
        ):
            grouped[series_of(entry)].append((entry, float(value)))
    for runs in grouped.values():
        runs.sort(key=lambda pair: (pair[0]["timestamp"], pair[0]["run_id"]))
    return dict(sorted(grouped.items(), key=lambda item: sort_key(item[1][0][0])))


def headline_histories(
    entries: Iterable[Entry], metrics: str | Sequence[str] = HEADLINE_ORDER
) -> dict[str, tuple[str, History]]:
    """Each series' history for the first of `metrics` it has one for, with that metric;
    the series in `sort_key` order."""
    wanted = (metrics,) if isinstance(metrics, str) else tuple(metrics)
    entries = list(entries)
    chosen: dict[str, tuple[str, History]] = {}
    for metric in wanted:
        for sid, runs in histories(entries, metric).items():
            chosen.setdefault(sid, (metric, runs))
    return dict(sorted(chosen.items(), key=lambda item: sort_key(item[1][1][0][0])))


# --- every metric a series carries --------------------------------------------------------

DERIVED = DERIVED_FROM
"""Metrics computed from others a run carries (ARCHITECTURE.md, Regression detection):
where their sources are in the series, a step in them is the sources' step again, so they
are judged only in series that lack a source (an import that recorded only the latency):
`metrics.Metric.sources`."""


def _finite(value: Any) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def judged_metrics(runs: Sequence[Entry]) -> list[str]:
    """Every metric with a direction that `runs` (one series) carry, each its own history
    (ARCHITECTURE.md, Regression detection): the headline order first (peak, decode,
    prefill), then the catalog's other metrics in registry order, then the declared ones;
    less those derived from a metric the series carries (`DERIVED`) and those that move in
    lockstep with one already judged (`_lockstep`: a batch-1 rate that is the decode rate),
    so one step is not found twice."""
    order = dict.fromkeys([*HEADLINE_ORDER, *CATALOG_METRICS, *declared_metrics()])
    carried = {m for m in order if any(_finite(r.get(m)) for r in runs)}
    out: list[str] = []
    for metric in order:
        if metric not in carried:
            continue
        if any(source in carried for source in DERIVED.get(metric, ())):
            continue
        if any(_lockstep(runs, metric, other) for other in out):
            continue
        out.append(metric)
    return out


def _lockstep(runs: Sequence[Entry], metric: str, other: str) -> bool:
    """Whether `metric` is a fixed multiple of `other` in every run: its steps would be the
    other's steps again."""
    ratios = []
    for run in runs:
        a, b = run.get(metric), run.get(other)
        if not _finite(a) or not _finite(b) or b == 0:
            return False
        ratios.append(float(a) / float(b))
    return bool(ratios) and max(ratios) - min(ratios) <= 1e-6 * max(abs(r) for r in ratios)


def metric_histories(
    entries: Iterable[Entry], metric: str | Sequence[str] | None = None
) -> list[tuple[str, History]]:
    """(metric, history) of every history to judge, the series in `sort_key` order and each
    series' metrics in `judged_metrics` order. `metric` None: every metric each series
    carries; a name: that metric; several: each series' first (`headline_histories`)."""
    if isinstance(metric, str):
        return [(metric, runs) for runs in histories(entries, metric).values()]
    if metric is not None:
        return list(headline_histories(entries, metric).values())
    by_series: dict[str, list[Entry]] = defaultdict(list)
    for entry in entries:
        if entry.get("status", "ok") == "ok" and not is_outlier(entry):
            by_series[series_of(entry)].append(entry)
    out: list[tuple[str, History]] = []
    for sid in sorted(by_series, key=lambda s: sort_key(by_series[s][0])):
        runs = by_series[sid]
        for name in judged_metrics(runs):
            out += [(name, history) for history in histories(runs, name).values()]
    return out


def _series_fields(entry: Entry) -> dict[str, Any]:
    return {
        "series": series_of(entry),
        "label": series_label(entry),
        **{name: entry.get(name) for name in REPORT_FIELDS},
    }


# --- step detection -----------------------------------------------------------------------


def _ranks(values: Sequence[float]) -> Any:
    """Average ranks (1-based), ties sharing the mean of their positions."""
    import numpy as np

    data = np.asarray(values, dtype=float)
    order = np.argsort(data, kind="mergesort")
    ranks = np.empty(len(data), dtype=float)
    sorted_values = data[order]
    start = 0
    for end in range(1, len(data) + 1):
        if end == len(data) or sorted_values[end] != sorted_values[start]:
            ranks[order[start:end]] = (start + end + 1) / 2.0
            start = end
    return ranks


def _scan(rank_rows: Any, min_segment: int) -> Any:
    """|z| of the Mann-Whitney U for every admissible split, for each row of ranks, computed
    in place: `rank_rows` is overwritten and the result is a view of it. No temporaries of
    the rows' size: the permutation test's 999 rows at n = 2,250 take half the time."""
    import numpy as np

    n = rank_rows.shape[-1]
    left = np.arange(min_segment, n - min_segment + 1)
    np.cumsum(rank_rows, axis=-1, out=rank_rows)
    u = rank_rows[..., min_segment - 1 : n - min_segment]  # the columns left - 1, a view
    u -= left * (left + 1) / 2.0
    u -= left * (n - left) / 2.0
    np.abs(u, out=u)
    u /= np.sqrt(left * (n - left) * (n + 1) / 12.0)
    return u


def best_split(
    values: Sequence[float], *, min_segment: int = 3, permutations: int = 999, seed: int = 0
) -> tuple[int, float] | None:
    """The most likely step in `values` as (index of the first run after it, p-value).

    None when the series is too short to hold two segments of `min_segment` runs.
    """
    import numpy as np

    n = len(values)
    if n < 2 * min_segment:
        return None
    ranks = _ranks(values)
    observed = _scan(ranks[np.newaxis, :].copy(), min_segment)[0]
    split = int(np.argmax(observed)) + min_segment
    rng = np.random.default_rng(seed)
    shuffled = np.tile(ranks, (permutations, 1))
    rng.permuted(shuffled, axis=1, out=shuffled)  # the same stream as permuted(copy)
    null_max = _scan(shuffled, min_segment).max(axis=-1)
    p_value = (1 + int(np.count_nonzero(null_max >= observed.max() - 1e-12))) / (permutations + 1)
    return split, p_value


def robust_sd(values: Sequence[float]) -> float:
    """1.4826 x the median absolute deviation: the standard deviation of normal noise,
    undisturbed by the odd wedged run."""
    if not values:
        return 0.0
    centre = median(values)
    return 1.4826 * median(abs(v - centre) for v in values)


def effect_size(before: Sequence[float], after: Sequence[float]) -> float:
    """|median after - median before| in robust standard deviations of the noise within
    the two segments (residuals about each segment's own median, pooled)."""
    mb, ma = median(before), median(after)
    noise = robust_sd([v - mb for v in before] + [v - ma for v in after])
    if noise <= 0:
        noise = 1e-9 * max(abs(mb), abs(ma), 1e-300)
    return abs(ma - mb) / noise


def find_steps(
    values: Sequence[float],
    *,
    alpha: float = 0.01,
    min_change: float = 0.01,
    min_segment: int = 3,
    min_effect: float = MIN_EFFECT,
    permutations: int = 999,
    seed: int = 0,
) -> list[tuple[int, float]]:
    """Every step of the whole history: (first index after the step, p-value), in order.

    The segmentation of `benchlab.detect.segment` (module docstring): optimal partitioning of the
    despiked series, then a test per cut against its neighbouring segments. A cut counts
    when its p-value is below `alpha` AND the segment medians differ by at least
    `min_change` (relative) AND by `min_effect` deviations of the series' own noise (more
    next to a segment of fewer than `segment.SHORT` runs) AND a straight line does not
    explain it. `permutations` and `seed` are accepted for the callers written against the
    rank scan (`best_split`); the cut test is analytic and uses neither.
    """
    del permutations, seed

    cuts = find_cuts(
        values,
        alpha=alpha,
        min_change=min_change,
        min_segment=min_segment,
        min_effect=min_effect,
    )
    return [(cut.index, cut.p_value) for cut in cuts]


def segments(
    values: Sequence[float],
    *,
    alpha: float = 0.01,
    min_change: float = 0.01,
    min_segment: int = 3,
    min_effect: float = MIN_EFFECT,
) -> list[tuple[int, int]]:
    """[start, end) of every segment of constant level in `values`, oldest first: the cuts
    of `find_steps` and, where the newest runs stand outside every run since the last cut
    (`tail_step`, a suspect), a last segment of those runs. An empty series has none."""
    if not values:
        return []
    cuts = [
        cut
        for cut, _ in find_steps(
            values,
            alpha=alpha,
            min_change=min_change,
            min_segment=min_segment,
            min_effect=min_effect,
        )
    ]
    start = cuts[-1] if cuts else 0
    tail = tail_step(values, start, min_change=min_change)
    if tail is not None and tail[0] - start >= MIN_BASELINE:
        cuts.append(tail[0])
    return segment_bounds(cuts, len(values))


def current_segment(values: Sequence[float], **options: Any) -> tuple[int, int]:
    """[start, end) of the newest segment: the runs at the series' current level, the answer
    to "what does this machine do today" (`segments`; options as there). (0, 0) if empty."""
    found = segments(values, **options)
    return found[-1] if found else (0, 0)


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
    status: Literal["confirmed", "suspect", "outlier"] = "confirmed"
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


def _kind(metric: str, change: float) -> Literal["regression", "improvement"]:
    """A step is a regression when it moves against the metric's declared direction: a
    throughput going down, a latency, memory or energy figure going up."""
    worse = change > 0 if lower_is_better(metric) else change < 0
    return "regression" if worse else "improvement"


def noise_scale(values: Sequence[float]) -> float:
    """`segment.noise_scale`: the run-to-run noise from trimmed first differences."""
    return scale(values)


def tail_step(
    values: Sequence[float],
    start: int = 0,
    *,
    min_change: float = 0.01,
    suspect_effect: float = SUSPECT_EFFECT,
    min_baseline: int = MIN_BASELINE,
    max_tail: int = MAX_TAIL,
    min_tail: int = MIN_TAIL,
    noise_floor: float = 0.0,
) -> tuple[int, float, float] | None:
    """A step among the newest runs too recent to confirm: (first index of the tail,
    one-sided p-value, effect), or None.

    The baseline is `values[start:]` less the tail (the runs since the last confirmed step).
    The tail is the longest run of newest values (`min_tail` to `max_tail`) that all lie below the
    baseline's minimum, or all above its maximum. Under no change every ordering is equally
    likely, so the chance that the k newest of n runs are the k lowest is 1 / C(n, k): an
    exact p-value for any noise distribution. The median of the tail must also differ from
    the baseline's by `min_change`, and by `suspect_effect` deviations of the baseline's
    noise (`segment.noise_scale`) from both the baseline's median and the median of its
    newest `min_baseline` runs (a slow drift carries those along; a step does not); the
    noise at least `noise_floor` (`repeats.within_floor`).
    """
    n = len(values)
    for k in range(max_tail, min_tail - 1, -1):  # the longest tail that qualifies
        base = values[start : n - k]
        tail = values[n - k :]
        if len(base) < min_baseline:
            continue
        if not (max(tail) < min(base) or min(tail) > max(base)):
            continue
        mb, mt = median(base), median(tail)
        if mb == 0 or abs(mt - mb) / abs(mb) < min_change:
            continue
        noise = max(noise_scale(base), noise_floor)
        effect = abs(mt - mb) / noise
        latest = median(base[-min_baseline:])  # a drift brings the latest runs along
        if effect < suspect_effect or abs(mt - latest) / noise < suspect_effect:
            continue
        # Both directions were looked at: the two-sided p-value is twice the one-sided.
        return n - k, min(1.0, 2.0 / math.comb(len(base) + k, k)), effect
    return None


def fisher_combined(p_values: Sequence[float]) -> float:
    """Fisher's method: the p-value of several independent tests taken together (the
    chi-squared survival function with 2m degrees of freedom has a closed form)."""
    m = len(p_values)
    if m == 0:
        return 1.0
    x = -2.0 * sum(math.log(max(p, 1e-300)) for p in p_values)
    half = x / 2.0
    term, total = 1.0, 1.0
    for i in range(1, m):
        term *= half / i
        total += term
    return min(1.0, math.exp(-half) * total)


def detect(
    entries: Iterable[Entry],
    metric: str | Sequence[str] | None = DEFAULT_METRIC,
    *,
    alpha: float = 0.01,
    min_change: float = 0.01,
    min_segment: int = 3,
    min_effect: float = MIN_EFFECT,
    suspects: bool = True,
    lone_suspects: bool = False,
) -> list[Step]:
    """Every step in every series' whole history, oldest first within a series: confirmed
    steps (`find_steps`), kept where the false discovery rate across all the series tested
    stays at `alpha` (`control_fdr`), and, with `suspects`, a step among the newest runs too
    recent to confirm (`tail_step`), its confidence raised where other series of the same
    machine stepped the same way at the same time (`corroborate`; a suspect of one run only
    then, unless `lone_suspects`, for callers that corroborate across series later).
    Several metrics (`metrics.HEADLINE_ORDER`): each series is read in the first it has;
    None: every metric each series carries is its own history (`metric_histories`), the
    false discovery rate kept across all of them."""
    steps, tested = raw_steps(
        entries,
        metric,
        alpha=alpha,
        min_change=min_change,
        min_segment=min_segment,
        min_effect=min_effect,
        suspects=suspects,
    )
    return corroborate(control_fdr(steps, tested, alpha), keep_lone=lone_suspects)


def raw_steps(
    entries: Iterable[Entry],
    metric: str | Sequence[str] | None = DEFAULT_METRIC,
    *,
    alpha: float = 0.01,
    min_change: float = 0.01,
    min_segment: int = 3,
    min_effect: float = MIN_EFFECT,
    suspects: bool = True,
) -> tuple[list[Step], int]:
    """`detect` before its catalog-wide parts: every history's steps (`series_steps`) and
    how many histories were tested. `control_fdr` then `corroborate` of the steps of several
    calls together (the site's per-series workers) is `detect` of their entries together."""
    steps: list[Step] = []
    grouped = metric_histories(entries, metric)
    for series_metric, runs in grouped:
        steps += series_steps(
            runs,
            series_metric,
            alpha=alpha,
            min_change=min_change,
            min_segment=min_segment,
            min_effect=min_effect,
            suspects=suspects,
        )
    return steps, len(grouped)


def series_steps(
    runs: History,
    metric: str,
    *,
    alpha: float,
    min_change: float,
    min_segment: int,
    min_effect: float,
    suspects: bool,
) -> list[Step]:
    """The steps of one series' history (`detect` without the catalog-wide parts)."""

    fields = _series_fields(runs[0][0])
    floor = within_floor(runs, metric)  # a short history's noise: at least its repeats'
    values, gap = demode([value for _, value in runs])
    outliers = excursion_steps(runs, values, metric, min_change, fields)
    if outliers:  # judged without them: a run that dipped and came back is no step
        left_out = {step.first_bad_run for step in outliers}
        kept = [i for i, (entry, _) in enumerate(runs) if entry["run_id"] not in left_out]
        runs, values = [runs[i] for i in kept], [values[i] for i in kept]
    if gap is not None:
        fields["bimodal_gap"] = round(gap, 4)
    cuts = floored_steps(
        floor,
        values,
        alpha=alpha,
        min_change=min_change,
        min_segment=min_segment,
        min_effect=min_effect,
    )
    bounds = [0, *(cut for cut, _ in cuts), len(values)]
    found: list[tuple[int, float, float, float, float, str]] = []
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
        tail = tail_step(values, bounds[-2], min_change=min_change, min_tail=1, noise_floor=floor)
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
        change = (after - before) / before
        good, bad = runs[cut - 1][0], runs[cut][0]
        margin = max(min_change * abs(before), min_effect * noise, abs(after - before) / 2)
        later = [level for start, level in levels if start >= cut]
        steps.append(
            Step(
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
                _kind(metric, change),
                version_before=version_label(good),
                version_after=version_label(bad),
                revision_before=good.get("revision"),
                revision_after=bad.get("revision"),
                identity={
                    **fields,
                    "last_good_timestamp": good["timestamp"],
                    "confirmed_in_series": len(cuts),
                },
                status=status,  # type: ignore[arg-type]
                runs_after=len(values) - cut,
                effect=effect,
                open=_still_open(before, after, later, margin),
                p_value=p_value,
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
        change = (values[i] - before) / before
        z = abs(values[i] - before) / sigma
        p_value = min(1.0, n * math.erfc(z / math.sqrt(2)))
        good, bad = runs[i - 1][0], runs[i][0]
        out.append(
            Step(
                fields["series"],
                fields["label"],
                metric,
                bad["run_id"],
                bad["timestamp"],
                good["run_id"],
                before,
                values[i],
                change,
                1.0 - p_value,
                _kind(metric, change),
                version_before=version_label(good),
                version_after=version_label(bad),
                revision_before=good.get("revision"),
                revision_after=bad.get("revision"),
                identity={**fields, "last_good_timestamp": good["timestamp"]},
                status="outlier",
                runs_after=n - i,
                effect=z,
                p_value=p_value,
            )
        )
    return out


def _still_open(before: float, after: float, later: Sequence[float], margin: float) -> bool:
    """A step is open while every segment since it stays beyond `margin` on its side of the
    level before it: once a later step undoes it (a fix), it stays fixed, even if a new
    regression later takes the level there again (that one is a step of its own)."""
    side = math.copysign(1.0, after - before)
    return all((level - before) * side > margin for level in later)


def control_fdr(steps: Sequence[Step], tested: int, alpha: float = 0.01) -> list[Step]:
    """The confirmed steps that survive Benjamini-Hochberg across `tested` series at level
    `alpha`; suspects pass as they are (they never fail a gate and are counted apart).

    Each series (with its metric) is one hypothesis, "this history has a step", its p-value
    the smallest of its steps' times their number (Bonferroni within the series). With R of
    the `tested` series discovered, a discovered series keeps the steps whose own p-value is
    at most alpha R / tested (Benjamini and Bogomolov's selective level). So among hundreds
    of noise-only series a few chance dips do not each become a "confirmed" regression."""
    by_series: dict[tuple[str, str], list[Step]] = defaultdict(list)
    for step in steps:
        if step.status == "confirmed":
            by_series[(step.series, step.metric)].append(step)
    if not by_series:
        return list(steps)
    tested = max(tested, len(by_series))
    p_series = {  # the count found before any filtering: filtering twice changes nothing
        key: min(
            1.0,
            found[0].identity.get("confirmed_in_series", len(found))
            * min(s.p_value for s in found),
        )
        for key, found in by_series.items()
    }
    ranked = sorted(p_series.values())
    discovered = max(
        (k for k, p in enumerate(ranked, start=1) if p <= alpha * k / tested), default=0
    )
    level = alpha * discovered / tested
    return [
        step
        for step in steps
        if step.status != "confirmed"
        or (p_series[(step.series, step.metric)] <= level and step.p_value <= level)
    ]


def corroborate(steps: Sequence[Step], *, keep_lone: bool = False) -> list[Step]:
    """Suspects of one machine, same direction, whose windows (last good run to first bad
    run) overlap, corroborate each other: each gets the Fisher-combined confidence of the
    group and the count of the others. Confirmed steps are left as they are. A suspect of
    fewer than `MIN_TAIL` runs is kept only if corroborated: one newest run beyond the rest
    of one series is as often a wedged run as a step, but several series of one machine
    dropping together at their newest run is a machine-wide event. `keep_lone` keeps them
    all, for a caller that corroborates per series first and across series later."""
    groups: dict[tuple[Any, str], list[int]] = defaultdict(list)
    for index, step in enumerate(steps):
        if step.status == "suspect":
            groups[(step.identity.get("machine_id"), step.kind)].append(index)
    out = list(steps)
    for members in groups.values():
        for index in members:
            step = steps[index]
            lo = step.identity.get("last_good_timestamp", step.first_bad_timestamp)
            peers = [
                steps[j]
                for j in members
                if steps[j].identity.get("last_good_timestamp", "") <= step.first_bad_timestamp
                and steps[j].first_bad_timestamp >= lo
            ]
            if len(peers) < 2:
                continue
            combined = fisher_combined([1.0 - p.confidence for p in peers])
            out[index] = replace(
                step,
                confidence=max(step.confidence, 1.0 - combined),
                corroborated_by=len(peers) - 1,
            )
    return [
        step
        for step in out
        if keep_lone
        or step.status != "suspect"
        or step.runs_after >= MIN_TAIL
        or step.corroborated_by
    ]


def window_start(entries: Iterable[Entry], days: float) -> str | None:
    """The start of the "what changed" window: the newest run's timestamp less `days`.

    Derived from the data, never the wall clock (ARCHITECTURE.md, invariant 7): two builds of one
    catalog agree, and the window is "the last `days` of measurements", which is what a reader who
    last looked one publish ago wants when runs arrive in bursts."""
    from datetime import datetime, timedelta, timezone

    newest = max((e["timestamp"] for e in entries), default=None)
    if newest is None:
        return None
    try:
        moment = datetime.strptime(newest, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    except ValueError:
        return None
    try:
        return (moment - timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")
    except OverflowError:  # a window reaching past year 1: every run is in it
        return None


def recent(steps: Iterable[Step], since: str | None) -> list[Step]:
    """The steps whose first bad run is at or after `since` (all when None), newest first,
    regressions before improvements at equal time."""
    chosen = [s for s in steps if since is None or s.first_bad_timestamp >= since]
    return sorted(
        chosen,
        key=lambda s: (s.first_bad_timestamp, s.kind == "regression", s.series),
        reverse=True,
    )


# --- latest versus baseline ---------------------------------------------------------------


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
        fields = _series_fields(latest_entry)
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
