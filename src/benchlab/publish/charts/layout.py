"""The look every chart shares and its axes: fonts, palette, margins, legends, the axis
titles of each metric (`METRIC_TITLES`) and when an axis turns logarithmic."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from benchlab.metrics import CATALOG_METRICS, better_word, lower_is_better, unit_of

_FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"
TOP_SERIES = 8
"""Series drawn by default; the rest are in the legend, one click (or "show all") away."""
KEEP_SERIES = 16
"""Series a chart carries at most; the others are on their own series pages."""
DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x", "cross", "star", "hexagon")
_GRID = "rgba(128,128,128,0.25)"
PALETTE = (
    "#3b6fd4",
    "#e07b39",
    "#3a9d5d",
    "#c8423c",
    "#8a5cc2",
    "#2aa3b3",
    "#b8913a",
    "#d45c9a",
    "#5f6b7a",
    "#7fb13a",
)


_NAMES = {
    "peak_tok_per_sec": "Peak aggregate",
    "baseline_tok_per_sec": "Batch-1",
    "speedup": "Speedup",
    "prefill_tok_per_sec": "Prefill",
    "decode_tok_per_sec": "Decode",
    "peak_rss_mb": "Peak resident memory",
    "gpu_mem_peak_mb": "Peak GPU memory",
    "joules_per_token": "Energy per token",
    "decode_ms_per_token": "Time per output token",
    "ttft_ms": "Time to first token",
    "time_s": "Time",
    "mem_bytes": "Memory",
    "track_value": "Tracked value",
}


def metric_title(metric: str) -> str:
    """An axis title from the registry: the metric's name, its unit and, where the smaller
    value is the better run, the words that say so (a rising line is then a regression)."""
    name = _NAMES.get(metric) or metric.replace("_", " ").capitalize()
    unit = unit_of(metric)
    text = f"{name} tokens/s" if unit == "tok/s" else f"{name}, {unit}" if unit else name
    return f"{text} ({better_word(metric)})" if lower_is_better(metric) else text


METRIC_TITLES = {metric: metric_title(metric) for metric in CATALOG_METRICS}
"""The metrics a chart may draw, with their axis titles: one metric per axis. A metric
`benchlab.metrics.REGISTRY` declares lower-is-better says so on its axis."""


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


WIDE_RANGE = 20.0
"""A y range wider than this ratio is drawn on a log axis, or the slow series lie flat at 0."""


def log_y_if_wide(layout: dict[str, Any], values: Sequence[float | None]) -> None:
    """Linear unless the range demands a log axis, and then the axis title says so."""
    positive = [v for v in values if v is not None and v > 0]
    if positive and max(positive) / min(positive) > WIDE_RANGE:
        layout["yaxis"]["type"] = "log"
        layout["yaxis"]["dtick"] = "D2"  # 1, 2, 5 per decade: readable at phone size
        layout["yaxis"].pop("rangemode", None)
        title = layout["yaxis"]["title"]
        title["text"] = f"{title['text']} (log scale)"
