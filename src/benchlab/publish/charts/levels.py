"""Each machine at its best, and each series of one machine: charts that aggregate before
they pick (ARCHITECTURE.md, The current level).

A series is drawn at its current level (`query.level.series_levels`: the mean of its newest
segment, outliers left out), and a machine at its best series' level, the settings that got
there named on hover. Every machine is on the chart: aggregation comes first, so no machine
can be crowded out by another's many series.

The page filters (machine, model, precision) act on all of the data, not on a pre-picked
top: a machine's best at q4 is not its best overall, so the chart carries one trace per
combination of the filter values its runs hold (`meta.when`, e.g. `{"precision": "q4"}`)
and one per metric (`meta.when.metric`, picked with the chart's own metric selector), and
the page script shows the trace whose `when` matches. That is (models + 1) x (precisions +
1) x metrics traces of at most one bar per machine: small at any fleet size.

Bars always start at zero on a linear axis. Where the values span more than two decades
(`layout.wide`) the chart draws dots on a log axis with labelled 1-2-5 ticks instead: a bar
on a log axis has no true length.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from benchlab.catalog.format import Entry
from benchlab.metrics import CATALOG_METRICS, DEFAULT_METRIC, PEAK, lower_is_better, unit_of
from benchlab.publish.charts.base import (
    EXTRA,
    Chart,
    Styles,
    csv_columns,
    csv_row,
    describe,
    esc,
    point_data,
)
from benchlab.publish.charts.layout import METRIC_TITLES, base_layout, log_axis, wide
from benchlab.publish.charts.palette import PALETTE
from benchlab.query.level import LEVEL_WINDOW, SeriesLevel, StepMemo, series_levels_of

WHEN_DIMS = ("model", "precision")
"""The filter dimensions a trace may be made for (the machine filter acts on points)."""
SETTINGS = ("precision", "threads", "backend", "shape")
"""What a machine's best configuration is named by on hover (and the model, where several)."""
MAX_BARS = 40
"""Bars drawn on one machine's chart: its best series that match the page's filters."""
MAX_SERIES = 200
"""Series one machine's chart carries (the machine page's table lists as many)."""


def present_metrics(runs: Iterable[Entry]) -> list[str]:
    """The catalog metrics some run carries, in registry order: what the selector offers."""
    runs = list(runs)
    return [m for m in CATALOG_METRICS if any(r.get(m) is not None for r in runs)]


def tails(histories: Iterable[Sequence[Entry]]) -> list[Entry]:
    """The newest `LEVEL_WINDOW` runs of each history: all a level reads."""
    return [run for history in histories for run in history[-LEVEL_WINDOW:]]


def _combos(levels: Sequence[SeriesLevel]) -> list[dict[str, str]]:
    """Every filter state a trace is made for: each WHEN_DIMS value present, and "" (all)."""
    choices = []
    for dim in WHEN_DIMS:
        values = sorted({str(lv.latest[dim]) for lv in levels})
        choices.append(["", *values] if len(values) > 1 else [""])
    return [dict(zip(WHEN_DIMS, combo, strict=True)) for combo in itertools.product(*choices)]


def _matches(level: SeriesLevel, when: dict[str, str]) -> bool:
    return all(not want or str(level.latest[dim]) == want for dim, want in when.items())


def _best(levels: Iterable[SeriesLevel], metric: str) -> list[SeriesLevel]:
    """Each machine's best series, by machine id."""
    sign = -1.0 if lower_is_better(metric) else 1.0
    best: dict[str, SeriesLevel] = {}
    for lv in levels:
        machine = lv.latest["machine_id"]
        held = best.get(machine)
        if held is None or (sign * lv.level.value, lv.series) > (
            sign * held.level.value,
            held.series,
        ):
            best[machine] = lv
    return [best[m] for m in sorted(best)]


def three_figures(value: float) -> str:
    """`value` to three significant figures as people write it: 2,550 and 0.0123, never
    2.55e+03 (`,.3g` turns to e-notation from 1,000 on)."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    magnitude = math.floor(math.log10(abs(value)))
    if magnitude >= 2:
        return f"{round(value, 2 - magnitude):,.0f}"
    return f"{value:,.{2 - magnitude}f}"


def _level_text(lv: SeriesLevel) -> str:
    pm = lv.level.pm
    spread = f" ± {three_figures(pm)}" if pm is not None else ""
    runs = f"mean of {lv.level.n} run{'s' if lv.level.n != 1 else ''}{spread}"
    if lv.level.repeats:  # one run: its ± is of its own repeats (query.level.with_repeats)
        runs += f" (of its {lv.level.repeats} repeats: the spread within the run)"
    return runs + (" · unstable" if lv.level.unstable else "")


def _axis(metric: str, values: Sequence[float], horizontal: bool) -> dict[str, Any]:
    """The value axis of one metric: linear from zero, or log with labelled ticks."""
    axis: dict[str, Any] = {
        "title": {"text": METRIC_TITLES[metric]},
        "gridcolor": "rgba(128,128,128,0.25)",
        "linecolor": "#9ca3af",
        "automargin": True,
        "rangemode": "tozero",
    }
    if wide(values):
        log_axis(axis, values)
    if horizontal:
        axis["side"] = "top" if len(values) > 12 else "bottom"
    return axis


def machine_chart(
    runs: Sequence[Entry],
    slug: str = "throughput",
    metrics: Sequence[str] = (PEAK.name,),
    memo: StepMemo | None = None,
    known: Mapping[str, list[SeriesLevel]] | None = None,
) -> Chart:
    """One bar per machine at its best series' current level for each of `metrics` (the
    first is drawn first; the page offers the rest). Several machines: a bar per machine,
    every machine included. One machine (its own page): a horizontal bar per series.
    `known`: `series_levels_of(runs, ...)` where the caller has it for these metrics (a
    machine page's table reads the same levels)."""
    metrics = [m for m in metrics if any(r.get(m) is not None for r in runs)] or list(metrics[:1])
    metrics = metrics or [DEFAULT_METRIC]  # no ok run measured anything: an empty chart
    if known is not None and all(m in known for m in metrics):
        by_metric = known
    else:
        by_metric = series_levels_of(runs, metrics, memo)
    machines = {lv.latest["machine_id"] for lvs in by_metric.values() for lv in lvs}
    one = len(machines) == 1
    traces: list[dict[str, Any]] = []
    axes: dict[str, dict[str, Any]] = {}
    rows: list[dict[str, Any]] = []
    styles = Styles.of(lv.latest for lv in by_metric[metrics[0]])
    for metric in metrics:
        levels = by_metric[metric]
        values = [lv.level.value for lv in levels]
        dots = wide(values)
        axes[metric] = _axis(metric, values, one)
        # One machine: a trace per metric of all its series, sorted; the page keeps the best
        # `MAX_BARS` that match its filters (`meta.tail`), so no trace per filter state.
        for when in [dict.fromkeys(WHEN_DIMS, "")] if one else _combos(levels):
            chosen = [lv for lv in levels if _matches(lv, when)]
            chosen = _series_order(chosen, metric) if one else _best(chosen, metric)
            if not chosen:
                continue
            maker = _series_trace if one else _machine_trace
            trace = maker(chosen, metric, dots, styles)
            trace["meta"] = {"when": {**when, "metric": metric}}
            trace["visible"] = metric == metrics[0] and not any(when.values())
            traces.append(trace)
        if metric == metrics[0]:
            best = _series_order(levels, metric)[-MAX_BARS:] if one else _best(levels, metric)
            drawn = {lv.series for lv in best}
            rows += [_row(lv, metric, lv.series in drawn) for lv in _ranked(levels, metric)]
    return _finish(slug, traces, rows, axes, metrics, one, styles)


def _series_order(levels: Sequence[SeriesLevel], metric: str) -> list[SeriesLevel]:
    """One machine's series, best last: at the top of a horizontal chart (plotly draws the
    first category at the bottom), at most `MAX_SERIES`."""
    sign = -1.0 if lower_is_better(metric) else 1.0
    ranked = sorted(levels, key=lambda lv: (-sign * lv.level.value, lv.series))[:MAX_SERIES]
    return ranked[::-1]


def _hover(metric: str, value_axis: str) -> str:
    unit = unit_of(metric)
    return (
        f"<b>%{{customdata[0]}}</b> · %{{customdata[{EXTRA}]}}<br>%{{customdata[1]}}"
        f"<br>%{{customdata[{EXTRA + 1}]}}<br>%{{customdata[6]}}<br>newest run %{{customdata[4]}}"
        f"<br><b>%{{{value_axis}:,.4g}} {unit}</b> (%{{customdata[{EXTRA + 2}]}})<extra></extra>"
    )


def _machine_trace(
    chosen: Sequence[SeriesLevel], metric: str, dots: bool, styles: Styles
) -> dict[str, Any]:
    several_models = len({lv.latest["model"] for lv in chosen}) > 1
    settings = (("model",) if several_models else ()) + SETTINGS
    trace: dict[str, Any] = {
        "type": "scatter" if dots else "bar",
        "name": "best per machine",
        "x": [lv.latest["machine_id"] for lv in chosen],
        "y": [lv.level.value for lv in chosen],
        "customdata": [
            point_data(
                lv.latest, "best configuration", esc(describe(lv.latest, settings)), _level_text(lv)
            )
            for lv in chosen
        ],
        "marker": {"color": PALETTE[0]},
        "hovertemplate": _hover(metric, "y"),
        "showlegend": False,
        **_labels(chosen),
    }
    if dots:
        marker = {"color": PALETTE[0], "size": 12, "symbol": "diamond"}
        trace.update(mode="markers+text", textposition="top center", marker=marker)
    return trace


def _series_trace(
    chosen: Sequence[SeriesLevel], metric: str, dots: bool, styles: Styles
) -> dict[str, Any]:
    dims = [d for d in styles.varying if d != "machine_id"] or ["precision", "threads"]
    looks = [styles.look(lv.latest) for lv in chosen]
    trace: dict[str, Any] = {
        "type": "scatter" if dots else "bar",
        "orientation": "h",
        "name": esc(chosen[0].latest["machine_id"]),
        "y": [esc(describe(lv.latest, dims)) for lv in chosen],
        "x": [lv.level.value for lv in chosen],
        "customdata": [
            point_data(lv.latest, "series", esc(describe(lv.latest, SETTINGS)), _level_text(lv))
            for lv in chosen
        ],
        "marker": {
            "color": [lk.color for lk in looks],
            "pattern": {"shape": [lk.pattern for lk in looks]},
        },
        "hovertemplate": _hover(metric, "x"),
        "showlegend": False,
        **_labels(chosen),
    }
    if dots:  # a scatter has no orientation: the series are on y all the same
        trace.pop("orientation")
        trace.update(
            mode="markers+text",
            textposition="middle right",
            marker={
                "color": [lk.color for lk in looks],
                "size": 12,
                "symbol": [lk.symbol for lk in looks],
            },
        )
    return trace


def _ranked(levels: Sequence[SeriesLevel], metric: str) -> list[SeriesLevel]:
    sign = -1.0 if lower_is_better(metric) else 1.0
    return sorted(levels, key=lambda lv: (lv.latest["machine_id"], -sign * lv.level.value))


def _one_title(metric: str, axis: dict[str, Any]) -> str:
    log = " (log scale)" if axis.get("type") == "log" else ""
    return f"Each series at its level: {METRIC_TITLES[metric]}{log}"


def _labels(chosen: Sequence[SeriesLevel]) -> dict[str, Any]:
    """Each bar's value written beside it: a short bar next to a tall one stays readable."""
    return {
        "text": [three_figures(lv.level.value) for lv in chosen],
        "textposition": "outside",
        "cliponaxis": False,
    }


def _row(lv: SeriesLevel, metric: str, drawn: bool) -> dict[str, Any]:
    """A CSV row per series (the chart draws each machine's best: `drawn`)."""
    return csv_row(
        lv.latest,
        metric=metric,
        level=lv.level.value,
        runs_averaged=lv.level.n,
        drawn=drawn,
        timestamp=lv.latest["timestamp"],
    )


def _finish(
    slug: str,
    traces: list[dict[str, Any]],
    rows: list[dict[str, Any]],
    axes: dict[str, dict[str, Any]],
    metrics: Sequence[str],
    one: bool,
    styles: Styles,
) -> Chart:
    first = metrics[0]
    titles: dict[str, str] = {}
    if one:
        # The metric names the chart, not its axis: beside long series names on a phone
        # a centred axis title runs off the plot.
        titles = {m: _one_title(m, axis) for m, axis in axes.items()}
        for axis in axes.values():
            axis["title"]["text"] = ""
        title = titles[first]
        layout = base_layout(title, "", "")
        bars = min(MAX_BARS, max((len(t["y"]) for t in traces), default=1))
        layout["height"] = 160 + 26 * bars
        layout["xaxis"] = axes[first]
        layout["yaxis"].pop("rangemode")
        layout["yaxis"]["title"]["text"] = ""
        layout["margin"] = {**layout["margin"], "r": 48}  # room for the value beside a bar
        value_key = "xaxis"
    else:
        title = "Each machine at its best configuration"
        layout = base_layout(title, "", METRIC_TITLES[first])
        layout["yaxis"] = axes[first]
        layout["xaxis"]["type"] = "category"
        value_key = "yaxis"
    layout["showlegend"] = False
    layout["meta"] = {
        **({"tail": MAX_BARS} if one else {}),
        "metrics": [
            {
                "name": m,
                "title": METRIC_TITLES[m],
                "axis": value_key,
                "layout": axes[m],
                **({"chart_title": titles[m]} if one else {}),
            }
            for m in metrics
        ],
    }
    what = METRIC_TITLES[first].lower()
    return Chart(
        slug,
        title,
        {"data": traces, "layout": layout},
        rows,
        csv_columns("metric", "level", "runs_averaged", "drawn", "timestamp"),
        note="" if rows else f"No successful runs with {what} yet.",
    )
