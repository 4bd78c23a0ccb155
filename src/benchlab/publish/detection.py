"""The regression detector over the site's series, per series in worker processes
(`pool.pool_map`: fork where there, spawn elsewhere), merged as one `detect` would order
and corroborate them; over every metric the runs carry (`detect_metrics`), marked outliers
left out (`stats.is_outlier`).

Also what the home page asks of the steps: which regressions are still in effect at the
newest run of their series (`open_regressions`), and where the "what changed" window ends
when a machine's wrong clock stamped a run in the future (`window`, `future_runs`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

from benchlab.catalog.format import Entry
from benchlab.metrics import CATALOG_METRICS, DEFAULT_METRIC
from benchlab.pool import cpus, pool_map
from benchlab.regress import Step, control_fdr, corroborate, detect, histories, sort_key
from benchlab.stats import is_outlier

PARALLEL_RUNS = 20_000
"""From this many ok runs the step detector and the series pages run in a worker process
per CPU (the detector's permutation tests are most of a large site's work); below,
in-process."""

_DETECT_INPUT: dict[str, list[Entry]] = {}
"""The histories the detector workers read (inherited by forked ones, pickled once for
spawned ones: `pool.pool_map`)."""

DECODE = "decode_tok_per_sec"


Found = tuple[tuple[str, str] | None, list[Step], list[Step], "MetricSteps"]
MetricSteps = tuple[tuple[str, str] | None, list[Step], int]
"""One series' steps in its other metrics: its `sort_key`, the steps, the metrics tested."""


def _detect_series(sid: str) -> Found:
    """One series' `detect` over the headline metric (with the key `detect` orders series
    by), over decode (the series page's second chart), and over its other metrics
    (`_detect_metrics`), in one pass of the pool."""
    runs = [r for r in _DETECT_INPUT[sid] if not is_outlier(r)]  # marked runs detect nothing
    grouped = histories(runs)
    key = sort_key(next(iter(grouped.values()))[0][0]) if grouped else None
    return key, detect(runs, lone_suspects=True), detect(runs, DECODE), _detect_metrics(sid)


def detect_per_series(
    ok_of: dict[str, list[Entry]], workers: int | None = None
) -> tuple[list[Step], dict[str, list[Step]]]:
    """`detect` over every ok run (the headline metric), and each series' decode steps.

    `detect` reads each series alone, then keeps the false discovery rate across series
    (`control_fdr`) and corroborates suspects across series; a series
    yields at most one suspect per metric, so running it per series (in parallel), ordering
    the results as `detect` orders series and corroborating them together gives exactly
    `detect(all ok runs)`. `workers` defaults to one per CPU from `PARALLEL_RUNS` runs on.
    The same pass finds the steps of every other metric, which `site_metric_steps` hands
    to the pages of this render."""
    if workers is None:
        workers = workers_for(sum(len(runs) for runs in ok_of.values()))
    return merge_found(ok_of, find_per_series(ok_of, detect_order(ok_of), workers))


def detect_order(ok_of: dict[str, list[Entry]]) -> list[str]:
    """The series in the order their detector passes are handed out: long ones first."""
    return sorted(ok_of, key=lambda sid: (-len(ok_of[sid]), sid))


def find_per_series(
    ok_of: dict[str, list[Entry]], sids: Sequence[str], workers: int
) -> dict[str, Found]:
    """The detector's pass over each of `sids` (in `workers` processes), before the merge:
    `merge_found` of every series' results is `detect_per_series`."""
    try:
        results = pool_map(_detect_series, sids, workers, setup=_set_detect_input, shared=ok_of)
    finally:
        _set_detect_input({})
    return dict(zip(sids, results, strict=True))


def merge_found(
    ok_of: dict[str, list[Entry]], found: dict[str, Found]
) -> tuple[list[Step], dict[str, list[Step]]]:
    """Every series' results (`find_per_series`, from one process or several) as one
    `detect` orders and corroborates them; the same whatever order `found` holds them in."""
    found = {sid: found[sid] for sid in detect_order(ok_of)}
    ordered = sorted((key, sid) for sid, (key, _, _, _) in found.items() if key is not None)
    merged = [step for _, sid in ordered for step in found[sid][1]]
    steps = corroborate(control_fdr(merged, len(ordered)))  # FDR across all series, as detect
    _LAST_METRIC_STEPS[:] = [id(ok_of), _merge_metrics([r[3] for r in found.values()])]
    return steps, {sid: decode for sid, (_, _, decode, _) in found.items()}


def _set_detect_input(ok_of: dict[str, list[Entry]]) -> None:
    """Install the histories `_detect_series` reads (here, or in a spawned worker)."""
    global _DETECT_INPUT
    _DETECT_INPUT = ok_of


def workers_for(ok_runs: int) -> int:
    """Processes for the detector and the series pages: one per CPU from `PARALLEL_RUNS`
    ok runs on (the pages stay in-process where fork is missing: `SiteContext.in_workers`)."""
    return 1 if ok_runs < PARALLEL_RUNS else cpus()


# --- every metric a series carries -------------------------------------------------------

DERIVED = {
    "decode_ms_per_token": ("decode_tok_per_sec",),
    "ttft_ms": ("prefill_tok_per_sec",),
    "speedup": ("peak_tok_per_sec", "baseline_tok_per_sec"),
}
"""Metrics computed from others a run carries (ARCHITECTURE.md, Metrics): where their
sources are in the series, a step in them is the sources' step again, so they are read only
in series that lack a source (an import that recorded only the latency)."""


def metrics_of(runs: Sequence[Entry]) -> list[str]:
    """The catalog metrics the runs carry beyond the two the site always reads (the headline
    and decode), in registry order, less those derived from metrics the series carries and
    those that move in lockstep with one already read (`_lockstep`)."""
    carried = {m for r in runs for m in CATALOG_METRICS if r.get(m) is not None}
    read = [m for m in (DEFAULT_METRIC, DECODE) if m in carried]
    out: list[str] = []
    for m in CATALOG_METRICS:
        if m not in carried or m in (DEFAULT_METRIC, DECODE):
            continue
        if any(source in carried for source in DERIVED.get(m, ())):
            continue
        if any(_lockstep(runs, m, other) for other in read):
            continue
        read.append(m)
        out.append(m)
    return out


def _lockstep(runs: Sequence[Entry], metric: str, other: str) -> bool:
    """Whether `metric` is a fixed multiple of `other` in every run (as a batch-1 rate that
    is the decode rate, or a prefill rate derived from it): its steps would be the other's
    steps again, at the cost of a second detector pass."""
    ratios = []
    for run in runs:
        a, b = run.get(metric), run.get(other)
        if not isinstance(a, (int, float)) or not isinstance(b, (int, float)) or b == 0:
            return False
        ratios.append(a / b)
    return bool(ratios) and max(ratios) - min(ratios) <= 1e-6 * max(abs(r) for r in ratios)


def _detect_metrics(sid: str) -> tuple[tuple[str, str] | None, list[Step], int]:
    """One series' `detect` over each of its other metrics (`metrics_of`), marked runs
    left out, and how many metrics were tested."""
    runs = [r for r in _DETECT_INPUT[sid] if not is_outlier(r)]
    key = sort_key(runs[0]) if runs else None
    metrics = metrics_of(runs)
    return key, [step for m in metrics for step in detect(runs, m)], len(metrics)


def detect_metrics(ok_of: dict[str, list[Entry]], workers: int | None = None) -> list[Step]:
    """`detect` over every metric but the headline and decode, of every series, ordered as
    `detect` orders series; the false discovery rate kept across every (series, metric)
    history tested (`control_fdr`), suspects corroborated together (per machine and
    direction)."""
    if workers is None:
        workers = workers_for(sum(len(runs) for runs in ok_of.values()))
    sids = sorted(ok_of, key=lambda sid: (-len(ok_of[sid]), sid))
    try:
        results = pool_map(_detect_metrics, sids, workers, setup=_set_detect_input, shared=ok_of)
    finally:
        _set_detect_input({})
    return _merge_metrics(results)


def _merge_metrics(results: Iterable[MetricSteps]) -> list[Step]:
    """The per-series results of `_detect_metrics` as one `detect` would give them."""
    found = list(results)
    ordered = sorted((key, steps[0].series if steps else "", i)
                     for i, (key, steps, _) in enumerate(found) if key is not None)  # fmt: skip
    merged = [step for _, _, i in ordered for step in found[i][1]]
    return corroborate(control_fdr(merged, sum(count for _, _, count in found)))


_LAST_METRIC_STEPS: list[Any] = [None, []]
"""(id of the histories, their other metrics' steps) of the newest `detect_per_series`:
every render runs it first, then its pages ask `site_metric_steps`."""


def site_metric_steps(site: Any) -> list[Step]:
    """The other metrics' steps of a site's series: those its own `detect_per_series` pass
    found, or (a site whose steps came another way) `detect_metrics` once."""
    if _LAST_METRIC_STEPS[0] != id(site.groups.ok_of):
        _LAST_METRIC_STEPS[:] = [id(site.groups.ok_of), detect_metrics(site.groups.ok_of, 1)]
    found: list[Step] = _LAST_METRIC_STEPS[1]
    return found


# --- still in effect ---------------------------------------------------------------------


def still_in_effect(step: Step, later: Sequence[Step]) -> bool:
    """Whether a regression is still in effect at the newest run of its series: the
    detector's own verdict (`step.open`) where its steps carry one, else `open_by_level`."""
    if step.kind != "regression":
        return False
    verdict = getattr(step, "open", None)
    if isinstance(verdict, bool):
        return verdict
    return open_by_level(step, later)


def open_by_level(step: Step, later: Sequence[Step]) -> bool:
    """Still in effect, judged from the steps of the same series and metric after it
    (`later`, oldest first): each step's `after` is the level of the segment it starts, so
    the last one's is the series' level now. The regression is undone when that level has
    come back more than half way to the level before it (a fix, or a fix and a smaller new
    step); two regressions in a row both stay in effect."""
    level = later[-1].after if later else step.after
    drop = step.before - step.after  # signed: the metric's direction is in it
    return drop != 0 and (step.before - level) / drop > 0.5


def open_regressions(steps: Iterable[Step]) -> list[Step]:
    """The regressions still in effect (`still_in_effect`), largest first, then newest."""
    by_series: dict[tuple[str, str], list[Step]] = {}
    for step in steps:
        by_series.setdefault((step.series, step.metric), []).append(step)
    found = []
    for members in by_series.values():
        members.sort(key=lambda s: (s.first_bad_timestamp, s.first_bad_run))
        found += [s for i, s in enumerate(members) if still_in_effect(s, members[i + 1 :])]
    return sorted(found, key=open_order)


def open_order(step: Step) -> tuple[float, tuple[int, ...], str, str]:
    """Largest change first, then the newest first bad run, then by series and metric."""
    newest_first = tuple(-ord(c) for c in step.first_bad_timestamp)
    return (-abs(step.change), newest_first, step.series, step.metric)


# --- the window, anchored where a wrong clock cannot move it ------------------------------

FUTURE_TOLERANCE = timedelta(days=1)
"""A run stamped later than the build time plus this was stamped by a wrong clock."""


def parse_stamp(stamp: str) -> datetime | None:
    try:
        return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    except (TypeError, ValueError):
        return None


def future_runs(histories_of: Iterable[Sequence[Entry]], now: datetime) -> list[Entry]:
    """Runs stamped after `now` + `FUTURE_TOLERANCE`, newest first: each history is oldest
    first, so only its tail is read."""
    cutoff = (now + FUTURE_TOLERANCE).strftime("%Y-%m-%dT%H:%M:%SZ")
    found: list[Entry] = []
    for runs in histories_of:
        for run in reversed(runs):
            if run["timestamp"] <= cutoff:
                break
            found.append(run)
    return sorted(found, key=lambda r: (r["timestamp"], r["run_id"]), reverse=True)


def window(
    histories_of: Iterable[Sequence[Entry]], days: float, now: datetime
) -> tuple[str | None, str | None]:
    """(start, end) of the "what changed" window: it ends at the newest run not stamped in
    the future (`future_runs`) and starts `days` before. A run from a machine whose clock is
    a year ahead then moves nothing; two builds of one catalog still agree, since the build
    time only sets aside stamps no clock could honestly have written yet."""
    cutoff = (now + FUTURE_TOLERANCE).strftime("%Y-%m-%dT%H:%M:%SZ")
    newest: str | None = None
    for runs in histories_of:
        for run in reversed(runs):
            if run["timestamp"] <= cutoff:
                if newest is None or run["timestamp"] > newest:
                    newest = run["timestamp"]
                break
    moment = parse_stamp(newest) if newest else None
    if moment is None:
        return None, newest
    return (moment - timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ"), newest


def build_time() -> datetime:
    """The wall clock, read once per page: only to set aside stamps in the future."""
    return datetime.now(timezone.utc)
