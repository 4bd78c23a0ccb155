"""Plotly figures of the public catalog, and their html/png/svg/csv outputs.

Charts read only public files (`publish.data.PublicData`) so that the site can be built in
CI from what git tracks. Every figure is a pure function of the catalog: series and points
are sorted, div ids are fixed, and nothing carries a wall-clock stamp, so two builds from one
catalog are byte-identical (ARCHITECTURE.md, invariant 7).

Runs are filtered by the one filter (`query.filters.select`) and grouped by the one series
key (`identity.series_key`, carried by each entry as its `series` id): a run at two threads
is a line or bar of its own, never a point in the history of the same run at one thread, and
its label (`identity.series_label`) says so. The trend chart marks the steps the regression
detector (`benchlab.detect.regress`) finds, in the detector's own series.

Every point carries `customdata = [machine, model, precision, run_id, timestamp, series
label, version, ...]`; the small filter script shipped with the site (assets/benchlab.js)
filters any chart by the first three fields without knowing which kind of chart it is, and
the hover shows the series and the version axis (backend version, build, revision) of the
run behind the point.

The package by chart family: `palette` (Okabe–Ito colours, and the dash and marker that
tell apart series sharing a colour), `layout` (the shared look and the axes: titles per
metric, linear unless the drawn range needs log, labelled 1-2-5 log ticks, the pooled top
series), `base` (selection, labels in words, styles, customdata, `Chart`), `levels` (each
machine at its best series' current level, every machine included), `bars` (prefill vs
decode, cost), `scaling` (batch and threads), `history` (over time), `kinds`
(`build_charts`), `output` (JSON, CSV, images, `bench chart`). Import from here.
"""

from __future__ import annotations

from benchlab.publish.charts.bars import (
    cost_chart,
    cost_per_million,
    cost_rows,
    prefill_decode_chart,
    throughput_chart,
)
from benchlab.publish.charts.base import (
    Chart,
    Regression,
    Styles,
    curve,
    esc,
    find_regressions,
    label,
    latest_by_series,
    shown,
    throughput,
)
from benchlab.publish.charts.history import (
    MAX_POINTS,
    builds_chart,
    downsample,
    series_chart,
    trend_chart,
)
from benchlab.publish.charts.kinds import CHART_KINDS, FORMATS, build_charts
from benchlab.publish.charts.layout import (
    KEEP_SERIES,
    METRIC_TITLES,
    TOP_SERIES,
    WIDE_RANGE,
    base_layout,
    fit_legend,
    top,
)
from benchlab.publish.charts.levels import machine_chart, present_metrics
from benchlab.publish.charts.output import (
    PLOTLY_CONFIG,
    chart_csv,
    chart_json,
    chart_page,
    write_charts,
    write_images,
)
from benchlab.publish.charts.scaling import scaling_chart, threads_chart

__all__ = [
    "CHART_KINDS",
    "FORMATS",
    "KEEP_SERIES",
    "MAX_POINTS",
    "METRIC_TITLES",
    "PLOTLY_CONFIG",
    "TOP_SERIES",
    "WIDE_RANGE",
    "Chart",
    "Regression",
    "Styles",
    "base_layout",
    "build_charts",
    "builds_chart",
    "chart_csv",
    "chart_json",
    "chart_page",
    "cost_chart",
    "cost_per_million",
    "cost_rows",
    "curve",
    "downsample",
    "esc",
    "find_regressions",
    "fit_legend",
    "label",
    "latest_by_series",
    "machine_chart",
    "prefill_decode_chart",
    "present_metrics",
    "scaling_chart",
    "series_chart",
    "shown",
    "threads_chart",
    "throughput",
    "throughput_chart",
    "top",
    "trend_chart",
    "write_charts",
    "write_images",
]
