"""A page per series with data: asv's per-benchmark graph, its steps, its runs."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from benchlab.catalog.format import Entry
from benchlab.identity import SERIES_FIELDS, version_label
from benchlab.publish.charts import builds_chart, downsample, label, series_chart
from benchlab.publish.context import HISTORY_RUNS, STEPS_LIMIT, SiteContext
from benchlab.publish.measures import (
    MEASURES,
    UNSTABLE_TITLE,
    is_unstable,
    measure_rows,
    unstable_badge,
)
from benchlab.publish.tables import neg, steps_table
from benchlab.publish.workers import in_workers
from benchlab.regress import Step

SERIES_BAND = 0.05
"""The threshold band drawn around each segment's median on a series' page."""


def identity_value(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return str(value)


def drawn_runs(history: Sequence[Entry], steps: Sequence[Step], metric: str) -> list[Entry]:
    """The runs `series_chart(history, steps, ..., metric)` draws as points."""
    with_metric = [r for r in history if r.get(metric) is not None]
    drawn = downsample(with_metric)
    wanted = {s.first_bad_run for s in steps}
    present = {r["run_id"] for r in drawn}
    return drawn + [r for r in with_metric if r["run_id"] in wanted and r["run_id"] not in present]


def series_pages(site: SiteContext) -> None:
    """asv's per-benchmark graph, one page per series with data (in `workers`)."""
    site.steps_by_series = {}
    for st in site.steps:
        site.steps_by_series.setdefault(st.series, []).append(st)
    in_workers(site, series_page, list(site.series_pages))


def series_page(site: SiteContext, sid: str) -> None:
    name = site.series_pages[sid]
    history = site.groups.ok_of[sid]
    newest = history[-1]
    mine_steps = site.steps_by_series.get(sid, [])
    decode_steps = site.decode_steps.get(sid, [])
    # The decode chart's band reads each drawn run's decode_stddev.
    site.data.upgrade(drawn_runs(history, decode_steps, "decode_tok_per_sec"))
    charts = [
        series_chart(history, mine_steps, f"series-{sid}-peak", "peak_tok_per_sec",
                     SERIES_BAND),
        series_chart(history, decode_steps,
                     f"series-{sid}-decode", "decode_tok_per_sec", SERIES_BAND),
        *(series_chart(history, [], f"series-{sid}-{m}", m, SERIES_BAND) for m in MEASURES),
        builds_chart(history, f"series-{sid}-builds"),
    ]  # fmt: skip
    charts = [c for c in charts if not c.empty]
    site.add_charts(charts)
    identity = [
        (field_name, identity_value(newest.get(field_name)))
        for field_name in SERIES_FIELDS
        if newest.get(field_name) is not None
    ]
    ordered = sorted(mine_steps, key=lambda st: neg(st.first_bad_timestamp))
    site.page(
        f"series/{name}",
        "series.md.j2",
        root="../",
        title=label(newest),
        sid=sid,
        machine=site.machine_link(newest["machine_id"], "../"),
        model=site.model_link(newest["model"], "../"),
        identity=identity,
        count=len(history),
        version=version_label(newest) or "not recorded",
        charts=charts,
        measures=measure_rows(newest),
        unstable=unstable_badge(newest),
        unstable_count=sum(1 for r in history if is_unstable(r)),
        unstable_title=UNSTABLE_TITLE,
        steps=steps_table(
            ordered, site.by_id, site.series_pages, site.links, "../", STEPS_LIMIT,
            show_series=False,
        ),
        runs=site.runs_table(site.groups.all_of[sid][::-1], "../", HISTORY_RUNS,
                             machine=False),
    )  # fmt: skip
