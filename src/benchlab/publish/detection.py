"""The regression detector over the site's series, per series in worker processes
(`pool.pool_map`: fork where there, spawn elsewhere), merged as one `detect` would order
and corroborate them."""

from __future__ import annotations

from benchlab.catalog.format import Entry
from benchlab.pool import cpus, pool_map
from benchlab.regress import Step, corroborate, detect, histories, sort_key

PARALLEL_RUNS = 20_000
"""From this many ok runs the step detector and the series pages run in a worker process
per CPU (the detector's permutation tests are most of a large site's work); below,
in-process."""

_DETECT_INPUT: dict[str, list[Entry]] = {}
"""The histories the detector workers read (inherited by forked ones, pickled once for
spawned ones: `pool.pool_map`)."""

DECODE = "decode_tok_per_sec"


def _detect_series(sid: str) -> tuple[tuple[str, str] | None, list[Step], list[Step]]:
    """One series' `detect` over the headline metric (with the key `detect` orders series
    by) and over decode (the series page's second chart)."""
    runs = _DETECT_INPUT[sid]
    grouped = histories(runs)
    key = sort_key(next(iter(grouped.values()))[0][0]) if grouped else None
    return key, detect(runs), detect(runs, DECODE)


def detect_per_series(
    ok_of: dict[str, list[Entry]], workers: int | None = None
) -> tuple[list[Step], dict[str, list[Step]]]:
    """`detect` over every ok run (the headline metric), and each series' decode steps.

    `detect` reads each series alone, then corroborates suspects across series; a series
    yields at most one suspect per metric, so running it per series (in parallel), ordering
    the results as `detect` orders series and corroborating them together gives exactly
    `detect(all ok runs)`. `workers` defaults to one per CPU from `PARALLEL_RUNS` runs on."""
    if workers is None:
        workers = workers_for(sum(len(runs) for runs in ok_of.values()))
    sids = sorted(ok_of, key=lambda sid: (-len(ok_of[sid]), sid))  # long ones first
    try:
        results = pool_map(_detect_series, sids, workers, setup=_set_detect_input, shared=ok_of)
    finally:
        _set_detect_input({})
    found = dict(zip(sids, results, strict=True))
    ordered = sorted((key, sid) for sid, (key, _, _) in found.items() if key is not None)
    steps = corroborate([step for _, sid in ordered for step in found[sid][1]])
    return steps, {sid: decode for sid, (_, _, decode) in found.items()}


def _set_detect_input(ok_of: dict[str, list[Entry]]) -> None:
    """Install the histories `_detect_series` reads (here, or in a spawned worker)."""
    global _DETECT_INPUT
    _DETECT_INPUT = ok_of


def workers_for(ok_runs: int) -> int:
    """Processes for the detector and the series pages: one per CPU from `PARALLEL_RUNS`
    ok runs on (the pages stay in-process where fork is missing: `SiteContext.in_workers`)."""
    return 1 if ok_runs < PARALLEL_RUNS else cpus()
