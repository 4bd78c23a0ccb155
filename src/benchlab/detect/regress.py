"""Regression detection over a whole catalog: every series' steps, kept honest at fleet scale
(ARCHITECTURE.md, Regression detection).

Each history is judged on its own (`steps.series_steps`: the cuts and the tail check of
`cuts`, the excursions of `noise`). Two guards then read the catalog as a whole, where
hundreds of short series are tested at once. The false discovery rate is kept at `alpha`
across all the series of the catalog (`control_fdr`: Benjamini-Hochberg over the series'
p-values), so a few chance dips among hundreds of noise-only series do not each become a
confirmed regression. And suspects of one machine that start together (a new driver, a
thermal problem) corroborate each other (`corroborate`): their p-values are combined by
Fisher's method, and the confidence says so.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from benchlab.detect.cuts import DEFAULTS, MIN_TAIL, Thresholds, fisher_combined
from benchlab.detect.history import Entry, metric_histories
from benchlab.detect.steps import Step, series_steps
from benchlab.metrics import DEFAULT_METRIC


def detect(
    entries: Iterable[Entry],
    metric: str | Sequence[str] | None = DEFAULT_METRIC,
    limits: Thresholds = DEFAULTS,
    *,
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
    steps, tested = raw_steps(entries, metric, limits, suspects=suspects)
    return corroborate(control_fdr(steps, tested, limits.alpha), keep_lone=lone_suspects)


def raw_steps(
    entries: Iterable[Entry],
    metric: str | Sequence[str] | None = DEFAULT_METRIC,
    limits: Thresholds = DEFAULTS,
    *,
    suspects: bool = True,
) -> tuple[list[Step], int]:
    """`detect` before its catalog-wide parts: every history's steps (`series_steps`) and
    how many histories were tested. `control_fdr` then `corroborate` of the steps of several
    calls together (the site's per-series workers) is `detect` of their entries together."""
    steps: list[Step] = []
    grouped = metric_histories(entries, metric)
    for series_metric, runs in grouped:
        steps += series_steps(runs, series_metric, limits, suspects=suspects)
    return steps, len(grouped)


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
