"""Regression detection over run history: latest-versus-baseline checks and step detection.

Step detection is a rank-based scan with a permutation test. For every split of a series the
Mann-Whitney U statistic compares the runs before and after; the largest standardised
statistic marks the step, and shuffling the same values (a permutation test) says how often
a step-free series of exactly these values would look as stepped. That makes the confidence
honest for any noise distribution: ranks shrug off the odd outlier run that throws a
mean-based test (conbench's z-score) and the segment medians that asv's penalised fit uses
give no confidence at all. Binary segmentation finds several steps in one history.

A series is `identity.series_key`: the whole measurement identity less the version axis
(backend version, build, commit, revision). So a run at two threads never joins the history
of the same run at one thread, and a new llama.cpp build or a new revision of the thing under
test shows up as a step inside its series, reported with the version before and after it.
Entries are the catalog reader's plain dicts (`catalog.read.load_catalog`).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import median
from typing import Any, Literal

from benchlab.errors import QueryError
from benchlab.identity import series_id, series_label, version_label
from benchlab.metrics import DEFAULT_METRIC

LOWER_IS_BETTER = frozenset({"per_token_median_ms", "median_ms", "decode_ms_per_token"})
REPORT_FIELDS = ("machine_id", "model", "precision", "backend", "mode", "threads")
"""The identity fields a report row repeats as columns; `series` and `label` name the rest."""

Entry = Mapping[str, Any]
History = list[tuple[Entry, float]]


def series_of(entry: Entry) -> str:
    """The entry's series: the `series` id every catalog entry carries (`identity.series_id`,
    the hash of `identity.series_key`, stored at build time), else computed from the entry.
    Grouping by the stored id is what keeps a 10,000-run site build fast."""
    return entry.get("series") or series_id(entry)


def sort_key(entry: Entry) -> tuple[str, str]:
    """Series in reading order: by label, then by id (two series may share a label when
    they differ only in a field the label leaves out, such as the KV cache types)."""
    return (series_label(entry), series_of(entry))


def histories(entries: Iterable[Entry], metric: str = DEFAULT_METRIC) -> dict[str, History]:
    """Ok runs with a value for `metric`, by series id (`series_of`), oldest first; the
    series come in `sort_key` order."""
    grouped: dict[str, History] = defaultdict(list)
    for entry in entries:
        value = entry.get(metric)
        if (
            entry.get("status", "ok") == "ok"
            and isinstance(value, (int, float))
            and not isinstance(value, bool)
            and math.isfinite(value)
        ):
            grouped[series_of(entry)].append((entry, float(value)))
    for runs in grouped.values():
        runs.sort(key=lambda pair: (pair[0]["timestamp"], pair[0]["run_id"]))
    return dict(sorted(grouped.items(), key=lambda item: sort_key(item[1][0][0])))


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
    """|z| of the Mann-Whitney U for every admissible split, for each row of ranks."""
    import numpy as np

    n = rank_rows.shape[-1]
    left = np.arange(min_segment, n - min_segment + 1)
    cumulative = np.cumsum(rank_rows, axis=-1)[..., left - 1]
    u = cumulative - left * (left + 1) / 2.0
    mean = left * (n - left) / 2.0
    spread = np.sqrt(left * (n - left) * (n + 1) / 12.0)
    return np.abs(u - mean) / spread


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
    observed = _scan(ranks[np.newaxis, :], min_segment)[0]
    split = int(np.argmax(observed)) + min_segment
    rng = np.random.default_rng(seed)
    shuffled = rng.permuted(np.tile(ranks, (permutations, 1)), axis=1)
    null_max = _scan(shuffled, min_segment).max(axis=1)
    p_value = (1 + int(np.count_nonzero(null_max >= observed.max() - 1e-12))) / (permutations + 1)
    return split, p_value


def find_steps(
    values: Sequence[float],
    *,
    alpha: float = 0.01,
    min_change: float = 0.01,
    min_segment: int = 3,
    permutations: int = 999,
    seed: int = 0,
) -> list[tuple[int, float]]:
    """Every step by binary segmentation: (first index after the step, p-value), in order.

    A split counts when its permutation p-value is below `alpha` AND the segment medians
    differ by at least `min_change` (relative): significant but negligible steps are noise
    to whoever reads the report.
    """
    found: list[tuple[int, float]] = []

    def visit(lo: int, hi: int) -> None:
        result = best_split(
            values[lo:hi], min_segment=min_segment, permutations=permutations, seed=seed
        )
        if result is None:
            return
        split, p_value = result
        before, after = median(values[lo : lo + split]), median(values[lo + split : hi])
        if p_value >= alpha or before == 0 or abs(after - before) / abs(before) < min_change:
            return
        found.append((lo + split, p_value))
        visit(lo, lo + split)
        visit(lo + split, hi)

    visit(0, len(values))
    return sorted(found)


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
        )
        return row


def _kind(metric: str, change: float) -> Literal["regression", "improvement"]:
    worse = change > 0 if metric in LOWER_IS_BETTER else change < 0
    return "regression" if worse else "improvement"


def detect(
    entries: Iterable[Entry],
    metric: str = DEFAULT_METRIC,
    *,
    alpha: float = 0.01,
    min_change: float = 0.01,
    min_segment: int = 3,
) -> list[Step]:
    """Step changes in every series' history, oldest first within a series."""
    steps: list[Step] = []
    for runs in histories(entries, metric).values():
        fields = _series_fields(runs[0][0])
        values = [value for _, value in runs]
        cuts = find_steps(values, alpha=alpha, min_change=min_change, min_segment=min_segment)
        bounds = [0, *(cut for cut, _ in cuts), len(values)]
        for number, (cut, p_value) in enumerate(cuts, start=1):
            before = median(values[bounds[number - 1] : cut])
            after = median(values[cut : bounds[number + 1]])
            change = (after - before) / before
            good, bad = runs[cut - 1][0], runs[cut][0]
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
                    identity=fields,
                )
            )
    return steps


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
    metric: str = DEFAULT_METRIC,
    window: int = 5,
) -> list[Comparison]:
    """The latest run of each series on `machine` against a baseline in the same series.

    The baseline is the given run (its series only) or else the median of the `window` runs
    before the latest, so one lucky or unlucky run does not become the yardstick. A series
    with a single run has nothing to compare with and is left out: a fresh clone's first
    sweep (threads 1 and 2, two models, two precisions) is eight one-run series, not a
    comparison of a t1 run with a t2 run.
    """
    grouped = {
        k: v for k, v in histories(entries, metric).items() if v[0][0]["machine_id"] == machine
    }
    if not grouped:
        raise QueryError(f"no ok runs with {metric} on machine {machine!r}")
    if baseline_run is not None:
        owner = [
            k for k, runs in grouped.items() if any(e["run_id"] == baseline_run for e, _ in runs)
        ]
        if not owner:
            raise QueryError(f"baseline run {baseline_run!r} is not an ok run on {machine!r}")
        grouped = {owner[0]: grouped[owner[0]]}
    results = []
    for runs in grouped.values():
        latest_entry, latest_value = runs[-1]
        if baseline_run is not None:
            base_entry, base_value = next((e, v) for e, v in runs if e["run_id"] == baseline_run)
            base_label = baseline_run
            base_version = version_label(base_entry)
        elif len(runs) >= 2:
            previous = runs[-1 - window : -1]
            base_value = median(v for _, v in previous)
            base_label = f"median of {len(previous)} previous run(s)"
            versions = sorted({version_label(e) or "" for e, _ in previous})
            base_version = ", ".join(v for v in versions if v) or None
        else:
            continue
        change = (latest_value - base_value) / base_value if base_value else 0.0
        worse = change > threshold if metric in LOWER_IS_BETTER else change < -threshold
        fields = _series_fields(latest_entry)
        results.append(
            Comparison(
                fields["series"],
                fields["label"],
                metric,
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
