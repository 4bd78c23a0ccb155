"""The regression detector over the site's series, per series in worker processes
(`pool.pool_map`: fork where there, spawn elsewhere), merged as one `detect` would order
and corroborate them; every metric a series carries is its own history
(`history.judged_metrics`, as `bench regression` without `--metric`), marked outliers left
out (`stats.is_outlier`). The home page, the Regressions page and the series pages all
read these steps, so they agree with each other and with the CLI.

Also what the home page asks of the steps: which regressions are still in effect at the
newest run of their series (`open_regressions`), and where the "what changed" window ends
when a machine's wrong clock stamped a run in the future (`window`, `future_runs`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta, timezone

from benchlab.catalog.format import Entry
from benchlab.detect.history import DERIVED, judged_metrics, sort_key
from benchlab.detect.regress import control_fdr, corroborate, raw_steps
from benchlab.detect.stats import is_outlier
from benchlab.detect.steps import Step
from benchlab.metrics import DECODE as DECODE_METRIC
from benchlab.runtime.pool import cpus, pool_map

__all__ = ["DERIVED", "judged_metrics"]

PARALLEL_RUNS = 20_000
"""From this many ok runs the step detector and the series pages run in a worker process
per CPU (the detector's permutation tests are most of a large site's work); below,
in-process."""

_DETECT_INPUT: dict[str, list[Entry]] = {}
"""The histories the detector workers read (inherited by forked ones, pickled once for
spawned ones: `pool.pool_map`)."""

DECODE = DECODE_METRIC.name


Found = tuple[tuple[str, str] | None, list[Step], int, list[str]]
"""One series' detector pass: its `sort_key`, its steps in every metric it carries, how
many metric histories were tested (for the false discovery rate across all), and the
metrics it judged (`regress.judged_metrics`: the series page draws a chart for each)."""


def _detect_series(sid: str) -> Found:
    """One series' steps in every metric it carries (`regress.raw_steps`: before the false
    discovery rate and the corroboration, which `merge_found` applies across every series),
    with the key `detect` orders series by and the count of histories tested."""
    runs = [r for r in _DETECT_INPUT[sid] if not is_outlier(r)]  # marked runs detect nothing
    if not runs:
        return None, [], 0, []
    # `raw_steps(runs, None)` of one series, a metric at a time in `judged_metrics` order
    # (what its `metric_histories` does), so that the metrics are kept for the series page.
    metrics = judged_metrics(runs)
    steps: list[Step] = []
    tested = 0
    for metric in metrics:
        found, count = raw_steps(runs, metric)
        steps += found
        tested += count
    return sort_key(runs[0]), steps, tested, metrics


def detect_per_series(
    ok_of: dict[str, list[Entry]], workers: int | None = None
) -> tuple[list[Step], dict[str, list[Step]]]:
    """`detect(all ok runs, None)` (every metric of every series), and each series' steps.

    `detect` reads each history alone, then keeps the false discovery rate across every
    (series, metric) history (`control_fdr`) and corroborates suspects across series; so
    reading each series alone (in parallel, `raw_steps`), ordering the results as `detect`
    orders series and applying both to them together gives exactly `detect(all ok runs,
    None)`. `workers` defaults to one per CPU from `PARALLEL_RUNS` runs
    on."""
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
    `detect` orders and corroborates them, and the surviving steps by series; the same
    whatever order `found` holds them in."""
    found = {sid: found[sid] for sid in detect_order(ok_of)}
    ordered = sorted((key, sid) for sid, (key, *_) in found.items() if key is not None)
    merged = [step for _, sid in ordered for step in found[sid][1]]
    tested = sum(count for _, _, count, _ in found.values())
    steps = corroborate(control_fdr(merged, tested))  # FDR across every history, as detect
    by_series: dict[str, list[Step]] = {}
    for step in steps:
        by_series.setdefault(step.series, []).append(step)
    return steps, by_series


def _set_detect_input(ok_of: dict[str, list[Entry]]) -> None:
    """Install the histories `_detect_series` reads (here, or in a spawned worker)."""
    global _DETECT_INPUT
    _DETECT_INPUT = ok_of


def workers_for(ok_runs: int) -> int:
    """Processes for the detector and the series pages: one per CPU from `PARALLEL_RUNS`
    ok runs on (the pages stay in-process where fork is missing: `SiteContext.in_workers`)."""
    return 1 if ok_runs < PARALLEL_RUNS else cpus()


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
