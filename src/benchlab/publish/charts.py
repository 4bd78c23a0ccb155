"""Plotly figures of the public catalog, and their html/png/svg/csv outputs.

Charts read only public files (`publish.data.PublicData`) so that the site can be built in
CI from what git tracks. Every figure is a pure function of the catalog: series and points
are sorted, div ids are fixed, and nothing carries a wall-clock stamp, so two builds from one
catalog are byte-identical (invariant 7).

Runs are filtered by the one filter (`query.filters.select`) and grouped by the one series
key (`identity.series_key`, carried by each entry as its `series` id): a run at two threads
is a line or bar of its own, never a point in the history of the same run at one thread, and
its label (`identity.series_label`) says so. The trend chart marks the steps the regression
detector (`benchlab.regress`) finds, in the detector's own series.

Every point carries `customdata = [machine, model, precision, run_id, timestamp, series
label, version, ...]`; the small filter script shipped with the site (assets/benchlab.js)
filters any chart by the first three fields without knowing which kind of chart it is, and
the hover shows the series and the version axis (backend version, build, revision) of the
run behind the point.
"""

from __future__ import annotations

import csv
import html
import io
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from itertools import pairwise
from pathlib import Path
from statistics import median
from typing import Any

from benchlab.catalog.read import entry_curve
from benchlab.errors import ConfigError, StoreError
from benchlab.identity import series_id, series_label, series_of, version_label
from benchlab.layout import atomic_write_text, read_json
from benchlab.metrics import DEFAULT_METRIC
from benchlab.models import BatchResults
from benchlab.publish.data import PublicData
from benchlab.publish.static import copy_assets
from benchlab.query.filters import Filters, chronological, select
from benchlab.regress import Step, detect, sort_key

CHART_KINDS = ("throughput", "decode", "scaling", "threads", "prefill-decode", "cost", "trend")
"""Chart kinds in the order the site and `bench chart` show them."""

FORMATS = ("html", "png", "svg", "csv")

Entry = dict[str, Any]

_FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"
TOP_SERIES = 8
"""Series drawn by default; the rest are in the legend, one click (or "show all") away."""
KEEP_SERIES = 16
"""Series a chart carries at most; the others are on their own series pages."""
_DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
_SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x", "cross", "star", "hexagon")
_GRID = "rgba(128,128,128,0.25)"
_PALETTE = (
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


# --- selection and series -------------------------------------------------------------------


def shown(runs: Iterable[Entry], filters: Filters | None = None) -> list[Entry]:
    """The ok runs `filters` admit, oldest first: a failed run never reaches a chart."""
    return chronological(select(runs, replace(filters or Filters(), status="ok")))


def throughput(run: Entry) -> float | None:
    """The headline number of a table row: peak aggregate tok/s, else decode tok/s. Charts
    never mix the two on one axis: they take a `metric` (`METRIC_TITLES`)."""
    peak = run.get("peak_tok_per_sec")
    return peak if peak is not None else run.get("decode_tok_per_sec")


METRIC_TITLES = {
    "peak_tok_per_sec": "Peak aggregate tokens/s",
    "decode_tok_per_sec": "Decode tokens/s",
    "prefill_tok_per_sec": "Prefill tokens/s",
}
"""The metrics a chart may draw, with their axis titles: one metric per axis."""


@dataclass(frozen=True)
class Styles:
    """Colour by model, dash and marker by precision: the same model is the same colour on
    every chart of a page, and a precision is told apart without colour (print, colour
    blindness). Where every run is of one model (a model's page) colour goes to the
    machine instead, and names leave the model out (`name`)."""

    key: str
    colors: dict[str, str]
    dashes: dict[str, str]
    symbols: dict[str, str]

    @classmethod
    def of(cls, runs: Iterable[Entry]) -> Styles:
        runs = list(runs)
        models = sorted({r["model"] for r in runs})
        key = "model" if len(models) > 1 else "machine_id"
        names = sorted({r[key] for r in runs})
        precisions = sorted({r["precision"] for r in runs})
        return cls(
            key,
            {m: _PALETTE[i % len(_PALETTE)] for i, m in enumerate(names)},
            {p: _DASHES[i % len(_DASHES)] for i, p in enumerate(precisions)},
            {p: _SYMBOLS[i % len(_SYMBOLS)] for i, p in enumerate(precisions)},
        )

    def color(self, run: Entry) -> str:
        return self.colors[run[self.key]]

    def name(self, run: Entry, machine: bool = True) -> str:
        """The series label, less the model where the colour key is the machine."""
        if self.key == "model":
            return label(run, machine=machine)
        fields: dict[str, Any] = {**run, "model_id": None, "model": None}
        if not machine:
            fields["machine_id"] = None
        return series_label(fields)

    def line(self, run: Entry, color: str | None = None) -> dict[str, Any]:
        color = color or self.color(run)
        return {
            "line": {"color": color, "dash": self.dashes[run["precision"]]},
            "marker": {"color": color, "symbol": self.symbols[run["precision"]], "size": 6},
        }


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


def latest_by_series(runs: Iterable[Entry]) -> dict[str, Entry]:
    """The newest run of each series (`regress.series_of`: the detector's series), by series
    id, in the detector's reading order; ties go to the larger run id."""
    latest: dict[str, Entry] = {}
    for run in runs:
        key = series_of(run)
        best = latest.get(key)
        if best is None or (run["timestamp"], run["run_id"]) > (best["timestamp"], best["run_id"]):
            latest[key] = run
    return {series_of(run): run for run in sorted(latest.values(), key=sort_key)}


def label(run: Entry, machine: bool = True) -> str:
    """`identity.series_label` with the model's display name (what the site's pages and
    filters call it), optionally without the machine: an x axis of machines says that."""
    shown_fields: dict[str, Any] = {**run, "model_id": None}
    if not machine:
        shown_fields["machine_id"] = None
    return series_label(shown_fields)


def _peer_key(run: Entry) -> tuple[str, str]:
    """The series less its machine: one bar group or trace across machines (a sort key)."""
    peer = {**run, "machine_id": None}
    return (label(run, machine=False), series_id(peer))


# --- regressions ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Regression:
    """A run where a series stepped down: `value` is the run's own throughput (where the
    marker sits), `before`/`after` the medians either side of the step, `step` the
    detector's finding (with the versions either side)."""

    run: Entry
    value: float
    before: float
    after: float
    step: Step

    @property
    def drop(self) -> float:
        return 1.0 - self.after / self.before if self.before else 0.0


def find_regressions(runs: Iterable[Entry]) -> list[Regression]:
    """The regressions `benchlab.regress.detect` finds in the runs' series, oldest first."""
    runs = list(runs)
    by_id = {r["run_id"]: r for r in runs}
    found = []
    for step in detect(runs):
        run = by_id.get(step.first_bad_run)
        value = throughput(run) if run is not None else None
        if step.kind != "regression" or run is None or value is None:
            continue
        found.append(Regression(run, value, step.before, step.after, step))
    return sorted(found, key=lambda g: (g.run["timestamp"], g.run["run_id"]))


# --- batch curves ---------------------------------------------------------------------------


def curve(run: Entry, store_root: Path | None = None) -> list[dict[str, Any]]:
    """A run's batch curve sorted by batch: the catalog's copy (`entry_curve`), else the
    promoted public copy's batch.json. Private run dirs are never read: only a path under
    runs/public/ qualifies."""
    points = entry_curve(run)
    if points:
        return sorted(points, key=lambda p: p["batch"])
    path_text = run.get("path")
    if store_root is None or not path_text or not path_text.startswith("runs/public/"):
        return []
    path = store_root / path_text / "batch.json"
    if ".." in Path(path_text).parts or not path.is_file():
        return []
    try:
        batch = BatchResults.model_validate(read_json(path))
    except (StoreError, ValueError):
        return []
    return sorted(
        ({"batch": p.batch, "agg_tok_per_sec": p.agg_tok_per_sec} for p in batch.points),
        key=lambda p: p["batch"],
    )


# --- charts ---------------------------------------------------------------------------------


@dataclass
class Chart:
    """One chart: its figure as plain JSON, its rows for CSV, and a note for empty charts."""

    slug: str
    title: str
    figure: dict[str, Any]
    rows: list[dict[str, Any]]
    columns: tuple[str, ...]
    note: str = ""

    @property
    def empty(self) -> bool:
        return not self.rows


def base_layout(title: str, x_title: str, y_title: str, **extra: Any) -> dict[str, Any]:
    """The look every chart shares (the health chart of the site uses it too)."""
    layout: dict[str, Any] = {
        "title": {"text": title, "x": 0.0, "xanchor": "left", "font": {"size": 16}},
        "font": {"family": _FONT, "size": 13, "color": "#1f2937"},
        "colorway": list(_PALETTE),
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


def esc(text: str) -> str:
    """Plotly renders labels as a small HTML dialect: user strings go in as entities."""
    return html.escape(text, quote=False)


def _custom(run: Entry, *more: Any) -> list[Any]:
    return [
        esc(run["machine_id"]),
        esc(run["model"]),
        esc(run["precision"]),
        run["run_id"],
        run["timestamp"],
        esc(label(run)),
        esc(version_label(run) or "version not recorded"),
        series_of(run),
        *more,
    ]


_HOVER_RUN = (
    "<b>%{customdata[0]}</b><br>%{customdata[1]} · %{customdata[2]}<br>%{customdata[5]}"
    "<br>%{customdata[6]}<br>run %{customdata[3]}<br>%{customdata[4]}"
)
_EXTRA = 8
"""Index of the first chart-specific customdata field (7 is the series id: with the run id
at 3 it names the run page a click on the point opens)."""


def _row(run: Entry, **values: Any) -> dict[str, Any]:
    """The CSV columns every chart shares: who, which series, which version, which run."""
    return {
        "machine": run["machine_id"],
        "model": run["model"],
        "precision": run["precision"],
        "threads": run.get("threads"),
        "series": label(run),
        **values,
        "version": version_label(run),
        "run_id": run["run_id"],
    }


def _columns(*values: str) -> tuple[str, ...]:
    return ("machine", "model", "precision", "threads", "series", *values, "version", "run_id")


def _peer_groups(runs: Iterable[Entry]) -> list[tuple[str, list[Entry]]]:
    """Runs grouped by series less machine (one trace across machines), named, in order."""
    groups: dict[tuple[str, str], list[Entry]] = defaultdict(list)
    for run in runs:
        groups[_peer_key(run)].append(run)
    return [
        (key[0], sorted(members, key=lambda r: r["machine_id"]))
        for key, members in sorted(groups.items())
    ]


def throughput_chart(
    runs: Sequence[Entry], slug: str = "throughput", metric: str = "peak_tok_per_sec"
) -> Chart:
    """`metric` vs machine: newest run per series, a bar group per series less machine,
    coloured by model. Peak aggregate and decode are two charts, never one axis."""
    title_metric = METRIC_TITLES[metric]
    latest = [r for r in latest_by_series(runs).values() if r.get(metric) is not None]
    styles = Styles.of(latest)
    traces = []
    hover = _HOVER_RUN + "<br><b>%{y:,.1f} tok/s</b><extra></extra>"
    one_machine = len({r["machine_id"] for r in latest}) == 1
    if one_machine:
        # One machine (its own page): a horizontal bar per series, fastest on top, so the
        # long series names read level instead of slanting under the axis.
        ordered = sorted(latest, key=lambda r: (r[metric], r["run_id"]))
        traces.append(
            {
                "type": "bar",
                "orientation": "h",
                "name": esc(ordered[0]["machine_id"]),
                "y": [esc(label(r, machine=False)) for r in ordered],
                "x": [r[metric] for r in ordered],
                "customdata": [_custom(r) for r in ordered],
                "marker": {"color": [styles.color(r) for r in ordered]},
                "hovertemplate": hover.replace("%{y:,.1f}", "%{x:,.1f}"),
            }
        )
    else:
        for _name, members in _peer_groups(latest):
            traces.append(
                {
                    "type": "bar",
                    "name": esc(styles.name(members[0], machine=False)),
                    "x": [r["machine_id"] for r in members],
                    "y": [r[metric] for r in members],
                    "customdata": [_custom(r) for r in members],
                    "marker": {
                        "color": _PALETTE[len(traces) % len(_PALETTE)]
                        if styles.key != "model"
                        else styles.color(members[0]),
                        "pattern": {"shape": _pattern(styles, members[0]["precision"])},
                    },
                    "hovertemplate": hover,
                }
            )
    rows = [_row(r, tok_per_sec=r[metric], timestamp=r["timestamp"]) for r in latest]
    short = "Peak aggregate throughput" if metric == "peak_tok_per_sec" else "Decode speed"
    if one_machine:
        layout = base_layout(f"{short} by series (newest run)", title_metric, "")
        layout["yaxis"].pop("rangemode")
        layout["yaxis"]["automargin"] = True
        layout["xaxis"]["rangemode"] = "tozero"
        layout["height"] = 140 + 24 * len(latest)
        layout["showlegend"] = False
        values = [row["tok_per_sec"] for row in rows]
        positive = [v for v in values if v and v > 0]
        if positive and max(positive) / min(positive) > WIDE_RANGE:
            layout["xaxis"].update(type="log", dtick="D2")
            layout["xaxis"].pop("rangemode")
            layout["xaxis"]["title"]["text"] += " (log scale)"
        return Chart(
            slug,
            f"{short} by series",
            {"data": traces, "layout": layout},
            rows,
            _columns("tok_per_sec", "timestamp"),
        )
    layout = base_layout(f"{short} by machine (newest run)", "", title_metric, barmode="group")
    _log_y_if_wide(layout, [row["tok_per_sec"] for row in rows])
    top(traces, layout, [max(t["y"], default=0) for t in traces])
    return Chart(
        slug,
        f"{short} by machine",
        {"data": traces, "layout": layout},
        rows,
        _columns("tok_per_sec", "timestamp"),
        note="" if rows else f"No successful runs with {title_metric.lower()} yet.",
    )


_PATTERNS = ("", "/", ".", "x", "-", "|", "+", "\\")


def _pattern(styles: Styles, precision: str) -> str:
    """Bars have no dash: a fill pattern tells precisions apart instead."""
    return _PATTERNS[list(styles.dashes).index(precision) % len(_PATTERNS)]


WIDE_RANGE = 20.0
"""A y range wider than this ratio is drawn on a log axis, or the slow series lie flat at 0."""


def _log_y_if_wide(layout: dict[str, Any], values: Sequence[float | None]) -> None:
    """Linear unless the range demands a log axis, and then the axis title says so."""
    positive = [v for v in values if v is not None and v > 0]
    if positive and max(positive) / min(positive) > WIDE_RANGE:
        layout["yaxis"]["type"] = "log"
        layout["yaxis"]["dtick"] = "D2"  # 1, 2, 5 per decade: readable at phone size
        layout["yaxis"].pop("rangemode", None)
        title = layout["yaxis"]["title"]
        title["text"] = f"{title['text']} (log scale)"


def scaling_chart(
    runs: Sequence[Entry], store_root: Path | None = None, slug: str = "scaling"
) -> Chart:
    """Batch size vs aggregate throughput, a line per series (newest run of each), coloured
    by thread count and dashed by precision: how decode scales with threads and batch."""
    traces = []
    rows = []
    latest = list(latest_by_series(runs).values())
    styles = Styles.of(latest)
    thread_counts = sorted({r.get("threads") or 0 for r in latest})
    colors = {t: _PALETTE[i % len(_PALETTE)] for i, t in enumerate(thread_counts)}
    for run in sorted(latest, key=lambda r: (r.get("threads") or 0, sort_key(r))):
        points = curve(run, store_root)
        if not points:
            continue
        threads = run.get("threads")
        short = styles.name({**run, "threads": None})
        name = f"t{threads} · {short}" if threads is not None else short
        traces.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": esc(name),
                "legendgroup": f"t{threads}",
                "x": [p["batch"] for p in points],
                "y": [p["agg_tok_per_sec"] for p in points],
                "customdata": [_custom(run, p["batch"], threads) for p in points],
                **styles.line(run, colors[threads or 0]),
                "hovertemplate": _HOVER_RUN
                + f"<br>threads %{{customdata[{_EXTRA + 1}]}}, batch %{{x}}: "
                + "<b>%{y:,.1f} tok/s</b><extra></extra>",
            }
        )
        rows.extend(
            _row(run, batch=p["batch"], agg_tok_per_sec=p["agg_tok_per_sec"]) for p in points
        )
    layout = base_layout(
        "Scaling with batch size, a colour per thread count", "Batch size", "Aggregate tokens/s"
    )
    _log_y_if_wide(layout, [row["agg_tok_per_sec"] for row in rows])
    layout["xaxis"]["type"] = "log"
    layout["xaxis"]["dtick"] = 0.30102999566398120  # log10(2): ticks at powers of two
    layout["xaxis"]["title"]["text"] = "Batch size (log scale)"
    # Drawn first: the fastest line of every thread count, so each count shows by default.
    best: dict[str, float] = {}
    for trace in traces:
        group = trace["legendgroup"]
        best[group] = max(best.get(group, 0.0), max(trace["y"], default=0.0))
    peaks = [max(t["y"], default=0.0) for t in traces]
    firsts = [
        1e12 if p == best[t["legendgroup"]] else 0.0 for p, t in zip(peaks, traces, strict=True)
    ]
    top(traces, layout, [f + p for f, p in zip(firsts, peaks, strict=True)])
    return Chart(
        slug,
        "Scaling with batch size",
        {"data": traces, "layout": layout},
        rows,
        _columns("batch", "agg_tok_per_sec"),
        note="" if rows else "No run in this selection has batch points.",
    )


def threads_chart(runs: Sequence[Entry], slug: str = "threads") -> Chart:
    """Decode tok/s vs thread count, a line per series less threads (machine, model,
    precision, shape ...), from the newest run of each series."""
    latest = [r for r in latest_by_series(runs).values() if r.get("decode_tok_per_sec")]
    groups: dict[tuple[str, str], list[Entry]] = defaultdict(list)
    for run in latest:
        peer = {**run, "threads": None, "model_id": None}
        groups[(series_label(peer), series_id(peer))].append(run)
    styles = Styles.of(latest)
    traces = []
    rows = []
    for (_name, _), members in sorted(groups.items()):
        members = sorted(members, key=lambda r: r.get("threads") or 0)
        if all(r.get("threads") is None for r in members):
            continue
        traces.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": esc(styles.name({**members[0], "threads": None})),
                "x": [r.get("threads") for r in members],
                "y": [r["decode_tok_per_sec"] for r in members],
                "customdata": [_custom(r) for r in members],
                **styles.line(members[0]),
                "hovertemplate": _HOVER_RUN + "<br>%{x} threads: <b>%{y:,.1f} tok/s</b>"
                "<extra></extra>",
            }
        )
        rows.extend(_row(r, decode_tok_per_sec=r["decode_tok_per_sec"]) for r in members)
    layout = base_layout("Decode speed by thread count", "Threads", "Decode tokens/s")
    layout["xaxis"]["dtick"] = 1
    _log_y_if_wide(layout, [row["decode_tok_per_sec"] for row in rows])
    top(traces, layout, [max(t["y"], default=0) for t in traces])
    return Chart(
        slug,
        "Decode speed by thread count",
        {"data": traces, "layout": layout},
        rows,
        _columns("decode_tok_per_sec"),
        note="" if rows else "No run in this selection reports decode speed.",
    )


def prefill_decode_chart(runs: Sequence[Entry], slug: str = "prefill-decode") -> Chart:
    """Prefill vs decode tok/s per machine, grouped bars (newest run per series)."""
    latest = [
        r
        for r in latest_by_series(runs).values()
        if r.get("prefill_tok_per_sec") is not None or r.get("decode_tok_per_sec") is not None
    ]
    groups = _peer_groups(latest)
    traces = []
    for phase, attr, color in (
        ("prefill", "prefill_tok_per_sec", "#3b6fd4"),
        ("decode", "decode_tok_per_sec", "#e07b39"),
    ):
        for index, (name, group) in enumerate(groups):
            members = [r for r in group if r.get(attr) is not None]
            if not members:
                continue
            traces.append(
                {
                    "type": "bar",
                    "name": phase if len(groups) == 1 else f"{phase} · {esc(name)}",
                    "legendgroup": phase,
                    "x": [r["machine_id"] for r in members],
                    "y": [r[attr] for r in members],
                    "customdata": [_custom(r) for r in members],
                    "marker": {"color": color, "opacity": 1.0 - 0.25 * (index % 3)},
                    "hovertemplate": _HOVER_RUN
                    + f"<br>{phase}: <b>%{{y:,.1f}} tok/s</b><extra></extra>",
                }
            )
    rows = [
        _row(
            r,
            prefill_tok_per_sec=r.get("prefill_tok_per_sec"),
            decode_tok_per_sec=r.get("decode_tok_per_sec"),
        )
        for r in latest
    ]
    # Two panels, one metric each: prefill is often 10x decode, and one axis hides decode.
    for trace in traces:
        if trace["legendgroup"] == "decode":
            trace.update(xaxis="x2", yaxis="y2")
    layout = base_layout("Prefill and decode", "", "Prefill tokens/s", barmode="group")
    layout["grid"] = {
        "rows": 2,
        "columns": 1,
        "pattern": "independent",
        "roworder": "top to bottom",
    }
    layout["xaxis2"] = dict(layout["xaxis"])
    layout["yaxis2"] = {**layout["yaxis"], "title": {"text": "Decode tokens/s"}}
    layout["height"] = 560
    return Chart(
        slug,
        "Prefill vs decode",
        {"data": traces, "layout": layout},
        rows,
        _columns("prefill_tok_per_sec", "decode_tok_per_sec"),
        note="" if rows else "No run in this selection reports prefill or decode speed.",
    )


def cost_per_million(cost_per_hour: float, tok_per_sec: float) -> float:
    """USD per one million tokens at a sustained rate."""
    return cost_per_hour / (tok_per_sec * 3600.0) * 1_000_000.0


def cost_rows(runs: Sequence[Entry], data: PublicData) -> list[dict[str, Any]]:
    """The cost table: one row per series whose machine has a cost_per_hour, cheapest first."""
    rows = []
    for run in latest_by_series(runs).values():
        rate = throughput(run)
        price = data.cost_per_hour(run["machine_id"])
        if rate is None or rate <= 0 or price is None:
            continue
        rows.append(
            _row(
                run,
                tok_per_sec=rate,
                cost_per_hour=price,
                usd_per_million_tokens=round(cost_per_million(price, rate), 6),
            )
        )
    return sorted(
        rows,
        key=lambda r: (r["usd_per_million_tokens"], r["machine"], r["model"], r["series"]),
    )


def cost_chart(runs: Sequence[Entry], data: PublicData, slug: str = "cost") -> Chart:
    """$ per 1M tokens per machine, a bar group per series less machine (lower is better)."""
    rows = cost_rows(runs, data)
    by_run = {r["run_id"]: r for r in runs}
    priced = {row["run_id"]: row for row in rows}
    traces = []
    for name, members in _peer_groups(by_run[row["run_id"]] for row in rows):
        traces.append(
            {
                "type": "bar",
                "name": esc(name),
                "x": [m["machine_id"] for m in members],
                "y": [priced[m["run_id"]]["usd_per_million_tokens"] for m in members],
                "customdata": [
                    _custom(
                        m,
                        priced[m["run_id"]]["cost_per_hour"],
                        priced[m["run_id"]]["tok_per_sec"],
                    )
                    for m in members
                ],
                "hovertemplate": _HOVER_RUN
                + f"<br>$%{{customdata[{_EXTRA}]:.2f}}/h"
                + f" at %{{customdata[{_EXTRA + 1}]:,.1f}} tok/s"
                + "<br><b>$%{y:.4f} per 1M tokens</b><extra></extra>",
            }
        )
    layout = base_layout("Cost per million tokens (lower is better)", "", "USD / 1M tokens")
    layout["barmode"] = "group"
    return Chart(
        slug,
        "Cost per million tokens",
        {"data": traces, "layout": layout},
        rows,
        _columns("tok_per_sec", "cost_per_hour", "usd_per_million_tokens"),
        note="" if rows else "No machine in this selection has a cost_per_hour in its specs.",
    )


def trend_chart(
    runs: Sequence[Entry],
    slug: str = "trend",
    regressions: Sequence[Regression] | None = None,
    metric: str = "peak_tok_per_sec",
    max_points: int | None = None,
    styles: Styles | None = None,
) -> Chart:
    """Throughput over time, a line per series (the detector's); regressions marked in red.

    `regressions` found over a larger set of whole series (the site finds them once for
    every page) are kept where their run is among `runs`. `styles` may come from a caller
    that passes runs it has already thinned as `max_points` would (the site at scale):
    `Styles.of` the unthinned runs, whose set of models, machines and precisions a thinned
    history may not hold.
    """
    series: dict[str, list[Entry]] = defaultdict(list)
    for run in runs:
        if run.get(metric) is not None:
            series[series_of(run)].append(run)
    if styles is None:
        styles = Styles.of(r for members in series.values() for r in members)
    lines = sorted(series.values(), key=lambda members: sort_key(members[0]))
    if regressions is None:
        regressions = find_regressions(runs)
    else:
        present = {r["run_id"] for members in lines for r in members}
        regressions = [g for g in regressions if g.run["run_id"] in present]
    flagged = {g.run["run_id"] for g in regressions}
    traces = []
    rows = []
    for index, members in enumerate(lines):
        members.sort(key=lambda r: (r["timestamp"], r["run_id"]))
        if max_points is not None:
            keep = {r["run_id"] for r in downsample(members, max_points, metric)}
            members = [r for r in members if r["run_id"] in keep or r["run_id"] in flagged]
            lines[index] = members
        traces.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": esc(styles.name(members[0])),
                "x": [r["timestamp"] for r in members],
                "y": [r[metric] for r in members],
                "customdata": [_custom(r) for r in members],
                **styles.line(members[0]),
                "hovertemplate": _HOVER_RUN + "<br><b>%{y:,.1f} tok/s</b><extra></extra>",
            }
        )
        rows.extend(
            _row(
                r,
                timestamp=r["timestamp"],
                tok_per_sec=r[metric],
                regression=r["run_id"] in flagged,
            )
            for r in members
        )
    layout = base_layout("Throughput over time", "Run time (UTC)", METRIC_TITLES[metric])
    _log_y_if_wide(layout, [row["tok_per_sec"] for row in rows])
    layout["xaxis"]["type"] = "date"
    # The series drawn first: those with a regression, then the fastest (newest value).
    stepped = {series_of(g.run) for g in regressions}
    top(
        traces,
        layout,
        [(1e12 if series_of(m[0]) in stepped else 0) + (m[-1][metric] or 0) for m in lines],
    )
    kept = {point[7] for trace in traces for point in trace["customdata"][:1]}
    regressions = [g for g in regressions if series_of(g.run) in kept]
    if regressions:
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": "regression",
                "x": [g.run["timestamp"] for g in regressions],
                "y": [g.value for g in regressions],
                "customdata": [
                    _custom(g.run, round(100 * g.drop, 1), esc(_step_versions(g.step)))
                    for g in regressions
                ],
                "marker": {
                    "symbol": "x-thin-open",
                    "size": 14,
                    "color": "#c8423c",
                    "line": {"width": 3, "color": "#c8423c"},
                },
                "hovertemplate": _HOVER_RUN
                + f"<br><b>regression: -%{{customdata[{_EXTRA}]}}%</b> vs the runs before"
                + f"<br>%{{customdata[{_EXTRA + 1}]}}<extra></extra>",
            }
        )
    return Chart(
        slug,
        "Throughput over time",
        {"data": traces, "layout": layout},
        rows,
        _columns("timestamp", "tok_per_sec", "regression"),
        note="" if rows else "No successful runs in this selection yet.",
    )


MAX_POINTS = 300
"""A history longer than this is drawn downsampled (`downsample`): a page stays light at any
catalog size."""


def downsample(
    runs: Sequence[Entry], limit: int = MAX_POINTS, metric: str = DEFAULT_METRIC
) -> list[Entry]:
    """At most `limit` runs of one history, oldest first: the newest half as they are, the
    older runs in equal buckets, each drawn as its median run (a real run, so its point
    still opens its run page). Step runs the caller must keep are added back by it."""
    runs = list(runs)
    if len(runs) <= limit:
        return runs
    keep_new = limit // 2
    older, newer = runs[:-keep_new], runs[-keep_new:]
    buckets = limit - keep_new
    size = -(-len(older) // buckets)
    picked = []
    for start in range(0, len(older), size):
        bucket = sorted(
            older[start : start + size], key=lambda r: (r.get(metric) or 0, r["run_id"])
        )
        picked.append(bucket[len(bucket) // 2])
    return sorted(picked, key=lambda r: (r["timestamp"], r["run_id"])) + newer


_STEP_COLORS = {"regression": "#c8423c", "improvement": "#3a9d5d", "suspect": "#d97706"}


def series_chart(
    runs: Sequence[Entry],
    steps: Sequence[Step],
    slug: str,
    metric: str = "peak_tok_per_sec",
    threshold: float = 0.05,
) -> Chart:
    """One series over time (asv's per-benchmark graph): its points (each opens its run
    page), a +-stddev band where runs measured one, a threshold band of +-`threshold`
    around each segment's median between the detector's steps (bencher's bands), and the
    steps themselves marked, with the version before and after in the hover."""
    history = [r for r in runs if r.get(metric) is not None]
    total = len(history)
    drawn = downsample(history)
    wanted = {s.first_bad_run for s in steps}
    present = {r["run_id"] for r in drawn}
    drawn += [r for r in history if r["run_id"] in wanted and r["run_id"] not in present]
    drawn.sort(key=lambda r: (r["timestamp"], r["run_id"]))
    x = [r["timestamp"] for r in drawn]
    y = [r[metric] for r in drawn]
    traces: list[dict[str, Any]] = []
    spread_field = {"decode_tok_per_sec": "decode_stddev", "prefill_tok_per_sec": "prefill_stddev"}
    spread = spread_field.get(metric)
    if spread and any(r.get(spread) is not None for r in drawn):
        banded = [r for r in drawn if r.get(spread) is not None]
        traces.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": "+1 stddev",
                "x": [r["timestamp"] for r in banded],
                "y": [r[metric] + r[spread] for r in banded],
                "line": {"width": 0},
                "hoverinfo": "skip",
                "showlegend": False,
            }
        )
        traces.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": "± stddev",
                "x": [r["timestamp"] for r in banded],
                "y": [max(r[metric] - r[spread], 0) for r in banded],
                "fill": "tonexty",
                "fillcolor": "rgba(59,111,212,0.18)",
                "line": {"width": 0},
                "hoverinfo": "skip",
            }
        )
    traces.append(
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": "runs",
            "x": x,
            "y": y,
            "customdata": [_custom(r) for r in drawn],
            "line": {"color": "#3b6fd4", "width": 1.5},
            "marker": {"size": 6, "color": "#3b6fd4"},
            "hovertemplate": _HOVER_RUN + "<br><b>%{y:,.2f} tok/s</b><br>click: run page"
            "<extra></extra>",
        }
    )
    by_id = {r["run_id"]: r for r in history}
    marked = [s for s in steps if s.first_bad_run in by_id]
    if marked:
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": "detected step",
                "x": [s.first_bad_timestamp for s in marked],
                "y": [by_id[s.first_bad_run][metric] for s in marked],
                "customdata": [
                    _custom(
                        by_id[s.first_bad_run],
                        f"{s.status} {s.kind} {100 * s.change:+.1f}%",
                        esc(_step_versions(s)),
                        f"{s.confidence:.3f}",
                    )
                    for s in marked
                ],
                "marker": {
                    "symbol": "x-thin-open",
                    "size": 16,
                    "line": {"width": 3},
                    "color": [
                        _STEP_COLORS["suspect" if s.status == "suspect" else s.kind] for s in marked
                    ],
                },
                "hovertemplate": _HOVER_RUN
                + f"<br><b>%{{customdata[{_EXTRA}]}}</b>"
                + f" (confidence %{{customdata[{_EXTRA + 2}]}})"
                + f"<br>%{{customdata[{_EXTRA + 1}]}}<extra></extra>",
            }
        )
    # Threshold bands: +-threshold around each segment's median, segments split at steps.
    shapes: list[dict[str, Any]] = []
    cut_ids = sorted(
        (by_id[s.first_bad_run]["timestamp"], s.first_bad_run)
        for s in marked
        if s.status == "confirmed"
    )
    index = {r["run_id"]: i for i, r in enumerate(history)}
    bounds = [0, *sorted(index[run_id] for _, run_id in cut_ids), len(history)]
    for lo, hi in pairwise(bounds):
        segment = [r[metric] for r in history[lo:hi]]
        if not segment:
            continue
        centre = median(segment)
        shapes.append(
            {
                "type": "rect",
                "xref": "x",
                "yref": "y",
                "x0": history[lo]["timestamp"],
                "x1": history[hi - 1]["timestamp"],
                "y0": centre * (1 - threshold),
                "y1": centre * (1 + threshold),
                "fillcolor": "rgba(58,157,93,0.12)",
                "line": {"width": 1, "color": "rgba(58,157,93,0.5)", "dash": "dot"},
                "layer": "below",
            }
        )
    for s in marked:
        shapes.append(
            {
                "type": "line",
                "xref": "x",
                "yref": "paper",
                "x0": s.first_bad_timestamp,
                "x1": s.first_bad_timestamp,
                "y0": 0,
                "y1": 1,
                "line": {
                    "color": _STEP_COLORS["suspect" if s.status == "suspect" else s.kind],
                    "width": 1,
                    "dash": "dash",
                },
            }
        )
    title = f"{METRIC_TITLES[metric].replace(' tokens/s', '')} over time"
    if len(drawn) < total:
        title += f" ({len(drawn)} of {total} runs drawn; older runs as bucket medians)"
    layout = base_layout(title, "Run time (UTC)", METRIC_TITLES[metric])
    layout["xaxis"]["type"] = "date"
    layout["shapes"] = shapes
    _log_y_if_wide(layout, y)
    layout["annotations"] = [
        {
            "text": f"band: ±{100 * threshold:g}% of each segment's median",
            "xref": "paper",
            "yref": "paper",
            "x": 1,
            "y": 1.02,
            "xanchor": "right",
            "yanchor": "bottom",
            "showarrow": False,
            "font": {"size": 11, "color": "#6b7280"},
        }
    ]
    rows = [_row(r, timestamp=r["timestamp"], tok_per_sec=r[metric]) for r in drawn]
    return Chart(
        slug,
        title,
        {"data": traces, "layout": layout},
        rows,
        _columns("timestamp", "tok_per_sec"),
        note="" if rows else f"No run of this series reports {METRIC_TITLES[metric].lower()}.",
    )


def builds_chart(runs: Sequence[Entry], slug: str, metric: str = "peak_tok_per_sec") -> Chart:
    """The series across backend builds and revisions: a point per version (in the order
    each first appeared), its median with the range of its runs as error bars."""
    by_version: dict[str, list[Entry]] = defaultdict(list)
    for run in runs:
        if run.get(metric) is not None:
            by_version[version_label(run) or "not recorded"].append(run)
    order = sorted(by_version, key=lambda v: (min(r["timestamp"] for r in by_version[v]), v))
    medians = [median(r[metric] for r in by_version[v]) for v in order]
    highs = [max(r[metric] for r in by_version[v]) for v in order]
    lows = [min(r[metric] for r in by_version[v]) for v in order]
    newest = [max(by_version[v], key=lambda r: (r["timestamp"], r["run_id"])) for v in order]
    trace = {
        "type": "scatter",
        "mode": "lines+markers",
        "name": "median per version",
        "x": [esc(v) for v in order],
        "y": medians,
        "error_y": {
            "type": "data",
            "symmetric": False,
            "array": [h - m for h, m in zip(highs, medians, strict=True)],
            "arrayminus": [m - lo for m, lo in zip(medians, lows, strict=True)],
        },
        "customdata": [_custom(r, len(by_version[v])) for r, v in zip(newest, order, strict=True)],
        "marker": {"size": 8, "color": "#8a5cc2"},
        "line": {"color": "#8a5cc2"},
        "hovertemplate": "<b>%{x}</b><br>median <b>%{y:,.2f} tok/s</b> over "
        f"%{{customdata[{_EXTRA}]}} run(s)<br>newest run %{{customdata[3]}}<extra></extra>",
    }
    layout = base_layout("Across backend builds and revisions", "Version", METRIC_TITLES[metric])
    layout["xaxis"]["type"] = "category"
    rows = [
        {"version": v, "runs": len(by_version[v]), "median": m}
        for v, m in zip(order, medians, strict=True)
    ]
    return Chart(
        slug,
        "Across backend builds and revisions",
        {"data": [trace] if order else [], "layout": layout},
        rows,
        ("version", "runs", "median"),
        note="" if rows else "No runs with this metric.",
    )


def _step_versions(step: Step) -> str:
    """`version a → b` where the step came with a new build or revision, else `same version`."""
    before = step.version_before or "not recorded"
    after = step.version_after or "not recorded"
    return f"version {before} → {after}" if step.version_changed else f"same version ({after})"


def build_charts(
    data: PublicData,
    filters: Filters | None = None,
    kinds: Sequence[str] = CHART_KINDS,
    prefix: str = "",
    regressions: Sequence[Regression] | None = None,
    runs: Sequence[Entry] | None = None,
) -> list[Chart]:
    """The charts of the runs `filters` admit, in CHART_KINDS order; slugs get `prefix` for
    unique ids. `regressions` may come precomputed over whole series (see trend_chart), and
    `runs` (`shown(data.runs, filters)`, or as much of it as the chosen kinds read) too."""
    runs = shown(data.runs, filters) if runs is None else runs
    makers = {
        "throughput": lambda: throughput_chart(runs, prefix + "throughput"),
        "decode": lambda: throughput_chart(runs, prefix + "decode", "decode_tok_per_sec"),
        "scaling": lambda: scaling_chart(runs, data.store_root, prefix + "scaling"),
        "threads": lambda: threads_chart(runs, prefix + "threads"),
        "prefill-decode": lambda: prefill_decode_chart(runs, prefix + "prefill-decode"),
        "cost": lambda: cost_chart(runs, data, prefix + "cost"),
        "trend": lambda: trend_chart(runs, prefix + "trend", regressions),
    }
    unknown = [k for k in kinds if k not in makers]
    if unknown:
        raise ConfigError(f"unknown chart kind {unknown[0]!r}; choose from {', '.join(makers)}")
    charts = [makers[k]() for k in CHART_KINDS if k in kinds]
    for chart in charts:
        if chart.empty:
            chart.figure["layout"]["annotations"] = [
                {
                    "text": chart.note,
                    "showarrow": False,
                    "xref": "paper",
                    "yref": "paper",
                    "x": 0.5,
                    "y": 0.5,
                    "font": {"size": 14, "color": "#6b7280"},
                }
            ]
    return charts


# --- outputs --------------------------------------------------------------------------------

PLOTLY_CONFIG: dict[str, Any] = {
    "displaylogo": False,
    "responsive": True,
    "modeBarButtonsToRemove": ["select2d", "lasso2d"],
    "toImageButtonOptions": {"format": "svg", "scale": 1},
}


def chart_json(chart: Chart) -> str:
    """The chart as one deterministic JSON object: {data, layout, config}."""
    import json

    config = dict(PLOTLY_CONFIG)
    config["toImageButtonOptions"] = {
        **PLOTLY_CONFIG["toImageButtonOptions"],
        "filename": chart.slug,
    }
    payload = {"data": chart.figure["data"], "layout": chart.figure["layout"], "config": config}
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    # Keep "</script>" and friends from closing an inline script early.
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def chart_csv(chart: Chart) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(chart.columns), lineterminator="\n")
    writer.writeheader()
    for row in chart.rows:
        writer.writerow({k: ("" if row.get(k) is None else row.get(k)) for k in chart.columns})
    return buffer.getvalue()


def write_images(charts: Sequence[Chart], paths: Sequence[Path], fmt: str) -> None:
    """PNG/SVG through kaleido, all figures in one browser session."""
    import plotly.graph_objects as go
    import plotly.io as pio

    figures = []
    for chart in charts:
        figure = go.Figure(chart.figure)
        # Static images have no hover: the y axis must carry numbers of its own.
        figure.update_layout(paper_bgcolor="#ffffff", plot_bgcolor="#ffffff", width=960, height=540)
        figure.update_yaxes(showticklabels=True, ticks="outside", tickformat=",~r")
        figures.append(figure)
    for path in paths:
        path.parent.mkdir(parents=True, exist_ok=True)
    try:
        pio.write_images(figures, [str(p) for p in paths], format=fmt)
    except Exception as exc:  # kaleido reports a missing browser with many exception types
        raise StoreError(
            f"{paths[0]}: static export failed ({type(exc).__name__}: {exc})"
        ) from None


def write_charts(
    data: PublicData,
    filters: Filters,
    output: Path,
    fmt: str | None = None,
    kinds: Sequence[str] | None = None,
) -> list[Path]:
    """`bench chart`: one file when `output` ends in a format's suffix, else a directory of
    every chosen chart. Everything is computed before the first byte is written."""
    suffix = output.suffix.lower().lstrip(".")
    single = suffix in FORMATS
    fmt = fmt or (suffix if single else "html")
    if single and suffix != fmt:
        raise ConfigError(f"--output {output}: ends in .{suffix} but --format is {fmt}")
    if single:
        kinds = kinds or (["scaling"] if filters.run_type == "batch" else ["throughput"])
        if len(kinds) > 1:
            raise ConfigError(f"--output {output}: one file holds one chart; give a directory")
    charts = build_charts(data, filters, kinds or CHART_KINDS)
    paths = [output] if single else [output / f"{c.slug}.{fmt}" for c in charts]
    if fmt in ("png", "svg"):
        write_images(charts, paths, fmt)
        return paths
    texts = [chart_csv(c) if fmt == "csv" else chart_page(c) for c in charts]
    for path, text in zip(paths, texts, strict=True):
        atomic_write_text(path, text)
    if fmt == "html":
        copy_assets(paths[0].parent)
    return paths


def chart_page(chart: Chart) -> str:
    """A standalone chart page; plotly.min.js and benchlab.js are loaded from beside it."""
    from jinja2 import Environment, PackageLoader
    from markupsafe import Markup

    env = Environment(loader=PackageLoader("benchlab.publish", "templates"), autoescape=True)
    return env.get_template("chart.html.j2").render(chart=chart, data=Markup(chart_json(chart)))
