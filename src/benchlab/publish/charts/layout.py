"""The look every chart shares and its axes: fonts, palette, margins, legends, the axis
titles of each metric (`METRIC_TITLES`) and when an axis turns logarithmic."""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from benchlab.metrics import CATALOG_METRICS, better_word, title, unit_of
from benchlab.publish.charts.palette import DASHES as DASHES  # re-exported: its home
from benchlab.publish.charts.palette import PALETTE
from benchlab.publish.charts.palette import SYMBOLS as SYMBOLS

_FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"
TOP_SERIES = 8
"""Series drawn by default; the rest are in the legend, one click (or "show all") away."""
KEEP_SERIES = 16
"""Series a chart carries at most; the others are on their own series pages."""
_GRID = "rgba(128,128,128,0.25)"


def metric_title(metric: str) -> str:
    """An axis title from the registry: the metric's name, its unit and which way is better
    (a falling throughput line and a rising latency line are both regressions)."""
    name = title(metric)
    unit = unit_of(metric)
    text = f"{name} tokens/s" if unit == "tok/s" else f"{name}, {unit}" if unit else name
    return f"{text} ({better_word(metric)})"


METRIC_TITLES = {metric: metric_title(metric) for metric in CATALOG_METRICS}
"""The metrics a chart may draw, with their axis titles: one metric per axis. A metric
`benchlab.metrics.REGISTRY` declares lower-is-better says so on its axis, and a
higher-is-better one (every throughput) says that."""


def base_layout(title: str, x_title: str, y_title: str, **extra: Any) -> dict[str, Any]:
    """The look every chart shares (the health chart of the site uses it too)."""
    layout: dict[str, Any] = {
        "title": {"text": title, "x": 0.0, "xanchor": "left", "font": {"size": 16}},
        "font": {"family": _FONT, "size": 13, "color": "#1f2937"},
        "colorway": list(PALETTE),
        "paper_bgcolor": "rgba(0,0,0,0)",
        "plot_bgcolor": "rgba(0,0,0,0)",
        "margin": {"l": 56, "r": 12, "t": 48, "b": 48},
        "height": 440,
        "hovermode": "closest",
        # Below the plot, not beside it: at 390 px a side legend takes half the width.
        "legend": {
            "orientation": "h",
            "x": 0.0,
            "xanchor": "left",
            "y": -0.22,
            "yanchor": "top",
            "font": {"size": 11},
            "itemclick": "toggle",
            "itemdoubleclick": "toggleothers",
        },
        "xaxis": {
            "title": {"text": x_title},
            "gridcolor": _GRID,
            "linecolor": "#9ca3af",
            "automargin": True,
        },
        "yaxis": {
            "title": {"text": y_title},
            "gridcolor": _GRID,
            "linecolor": "#9ca3af",
            "rangemode": "tozero",
            "automargin": True,
        },
    }
    layout.update(extra)
    return layout


def fit_legend(layout: dict[str, Any], entries: int) -> None:
    """Room below the plot for a legend of `entries` (about three to a row at desktop
    width), anchored to the bottom of the figure so it never covers the x axis title. The
    page script drops the legend of a crowded chart on a phone."""
    rows = -(-entries // 3)
    extra = 22 * rows
    layout["legend"].update(yref="container", y=0, yanchor="bottom")
    layout["margin"] = {**layout["margin"], "b": 72 + extra}
    layout["height"] = layout["height"] + extra


def top(
    traces: list[dict[str, Any]],
    layout: dict[str, Any],
    score: Sequence[float],
    keep: int = KEEP_SERIES,
) -> None:
    """Draw the `TOP_SERIES` traces with the highest score; the rest stay in the legend
    (`visible: legendonly`) and `layout.meta` tells the page to offer "show all". Past
    `keep` traces the rest are left out of the figure altogether (the meta counts them, and
    every series keeps its own page): a chart's data stays bounded at any fleet size."""
    order = sorted(range(len(traces)), key=lambda i: (-score[i], i))
    dropped = order[keep:]
    for i in sorted(dropped, reverse=True):
        del traces[i]
    kept = sorted(order[:keep])
    fit_legend(layout, len(traces))
    meta: dict[str, Any] = {}
    if len(traces) > TOP_SERIES:
        rank = {index: position for position, index in enumerate(kept)}
        for index in order[TOP_SERIES:keep]:
            traces[rank[index]]["visible"] = "legendonly"
        meta.update(hidden=len(traces) - TOP_SERIES, total=len(traces))
    if dropped:
        meta["dropped"] = len(dropped)
        layout["title"]["text"] += f" (top {keep} of {keep + len(dropped)} series)"
    if meta:
        layout["meta"] = meta


WIDE_RANGE = 100.0
"""A range wider than this ratio (two decades) is drawn on a log axis, or the slow series lie
flat at 0; a narrower one stays linear, from zero."""


def wide(values: Sequence[float | None]) -> bool:
    """Whether the positive `values` span more than `WIDE_RANGE`."""
    positive = [v for v in values if v is not None and v > 0]
    return bool(positive) and max(positive) / min(positive) > WIDE_RANGE


def tick_text(value: float) -> str:
    """A tick label that carries its magnitude: `200`, `5k`, `1.2M`, `0.05`."""
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= size:
            return f"{value / size:g}{suffix}"
    return f"{value:g}"


def ticks_125(values: Sequence[float | None]) -> list[float]:
    """1, 2, 5 per decade from below the smallest positive value to above the largest."""
    positive = [v for v in values if v is not None and v > 0]
    if not positive:
        return []
    low = math.floor(math.log10(min(positive)))
    high = math.ceil(math.log10(max(positive)))
    ticks = [m * 10.0**e for e in range(low, high + 1) for m in (1, 2, 5)]
    lo = max(t for t in ticks if t <= min(positive))
    hi = min((t for t in ticks if t >= max(positive)), default=ticks[-1])
    return [float(f"{t:.6g}") for t in ticks if lo <= t <= hi]


def log_axis(axis: dict[str, Any], values: Sequence[float | None]) -> None:
    """Make `axis` logarithmic with every 1-2-5 tick labelled in full (`200`, `5k`: never a
    bare `2` or `5` whose decade the reader must guess), and its title says so."""
    ticks = ticks_125(values)
    axis["type"] = "log"
    axis.pop("rangemode", None)
    axis.pop("dtick", None)
    axis.update(tickmode="array", tickvals=ticks, ticktext=[tick_text(t) for t in ticks])
    title = axis["title"]
    title["text"] = f"{title['text']} (log scale)"


def log_y_if_wide(layout: dict[str, Any], values: Sequence[float | None]) -> None:
    """Linear unless the range demands a log axis (`wide`), and then a labelled one."""
    if wide(values):
        log_axis(layout["yaxis"], values)


def numeric_axis(axis: dict[str, Any], values: Sequence[float | None]) -> None:
    """A numeric x axis of counts (threads, batch sizes): linear unless the range demands
    log (`wide`); few distinct values are each a labelled tick, many get plotly's own
    spacing, so 128 thread counts never make 128 overlapping labels."""
    present = sorted({v for v in values if v is not None and v > 0})
    axis.pop("dtick", None)
    if wide(present):
        log_axis(axis, present)
        if len(present) <= 12:
            axis.update(tickvals=present, ticktext=[tick_text(v) for v in present])
        return
    axis["type"] = "linear"
    if len(present) <= 12:
        axis.update(tickmode="array", tickvals=present, ticktext=[tick_text(v) for v in present])
    else:
        axis.update(tickmode="auto", nticks=10, tickformat=",~r")


POOL_SERIES = 400
"""Series a chart carries at most: the page's filters re-pick the top among them."""


MIN_DATE_SPAN = timedelta(days=1)
"""A time axis shows at least a day: plotly pads one run (or runs a minute apart) by a
fraction of a second and ticks it like 04:34:28.9995."""


def date_axis(axis: dict[str, Any], stamps: Sequence[str]) -> None:
    """A time axis over `stamps` (the catalog's `...Z` strings); under `MIN_DATE_SPAN`
    apart, a fixed range of a day centred on them, ticked in hours."""
    axis["type"] = "date"
    if not stamps:
        return
    moments = [datetime.fromisoformat(s.replace("Z", "")) for s in (min(stamps), max(stamps))]
    span = moments[1] - moments[0]
    if span >= MIN_DATE_SPAN:
        return
    middle = moments[0] + span / 2
    start, end = middle - MIN_DATE_SPAN / 2, middle + MIN_DATE_SPAN / 2
    axis.update(range=[start.strftime("%Y-%m-%d %H:%M:%S"), end.strftime("%Y-%m-%d %H:%M:%S")],
                tickformat="%H:%M\n%b %d, %Y")  # fmt: skip


def pool(
    traces: list[dict[str, Any]],
    layout: dict[str, Any],
    score: Sequence[float],
    limit: int = POOL_SERIES,
) -> None:
    """Like `top`, but the traces past `KEEP_SERIES` stay in the figure (hidden from the
    plot and the legend, `visible: false`), up to `limit`, each with its score in
    `meta.score`: the page's filters pick the top series again among those that match
    (assets/benchlab.js), so a filter acts on all of the data, not on a pre-picked top."""
    order = sorted(range(len(traces)), key=lambda i: (-score[i], i))
    dropped = order[limit:]
    for i in sorted(dropped, reverse=True):
        del traces[i]
    kept = sorted(order[:limit])
    position = {index: p for p, index in enumerate(kept)}
    for rank, index in enumerate(order[:limit]):
        trace = traces[position[index]]
        trace["meta"] = {**trace.get("meta", {}), "score": score[index]}
        if rank >= KEEP_SERIES:
            trace["visible"] = False
        elif rank >= TOP_SERIES:
            trace["visible"] = "legendonly"
    shown = min(len(traces), KEEP_SERIES)
    fit_legend(layout, shown)
    meta: dict[str, Any] = {"pick": [TOP_SERIES, KEEP_SERIES]}
    if shown > TOP_SERIES:
        meta.update(hidden=shown - TOP_SERIES, total=shown)
    if dropped:
        meta["dropped"] = len(dropped)
        layout["title"]["text"] += f" (top {limit} of {limit + len(dropped)} series)"
    layout["meta"] = meta


def auto_log(layout: dict[str, Any], axis_key: str, traces: Sequence[dict[str, Any]]) -> None:
    """The value axis of a chart whose filters pick its series again (`pool`): linear or
    log by what is drawn, not by every series it carries. Both versions go in
    `layout.meta.autolog` for the page script to choose between after each filter; the
    figure starts with the one its drawn series need. Call after `pool`."""
    value_key = axis_key[0]
    linear = copy.deepcopy(layout[axis_key])
    log = copy.deepcopy(linear)
    log_axis(log, [v for t in traces for v in t[value_key]])
    meta = layout.setdefault("meta", {})
    auto = meta.setdefault("autolog", {"wide": WIDE_RANGE})
    auto[axis_key] = {"key": value_key, "log": log, "linear": linear}
    drawn = [v for t in traces if t.get("visible", True) is True for v in t[value_key]]
    layout[axis_key] = copy.deepcopy(log if wide(drawn) else linear)
