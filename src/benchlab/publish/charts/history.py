"""Charts over time: the trend of many series, one series' own history with its steps and
bands (asv's per-benchmark graph), and a series across backend builds."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from itertools import pairwise
from statistics import median
from typing import Any

from benchlab.catalog.format import Entry
from benchlab.detect.history import sort_key
from benchlab.detect.stats import is_outlier
from benchlab.detect.steps import Step
from benchlab.identity import series_of, version_label
from benchlab.metrics import BASELINE, DEFAULT_METRIC, HEADLINE_ORDER, PEAK, get, unit_of
from benchlab.publish.charts.base import (
    EXTRA,
    HOVER_RUN,
    Chart,
    Regression,
    Styles,
    csv_columns,
    csv_row,
    esc,
    find_regressions,
    point_data,
    step_versions,
)
from benchlab.publish.charts.layout import (
    METRIC_TITLES,
    base_layout,
    date_axis,
    log_y_if_wide,
    top,
)
from benchlab.publish.charts.palette import PALETTE
from benchlab.publish.measures import UNSTABLE_TITLE, is_unstable

TREND_METRICS = (*HEADLINE_ORDER, BASELINE.name)
"""The throughputs a trend chart offers, the first present drawn first: llama-bench
measures no peak, so its trend opens on decode."""


def trend_metrics(runs: Sequence[Entry]) -> list[str]:
    """The `TREND_METRICS` some run among `runs` carries, in that order."""
    return [m for m in TREND_METRICS if any(r.get(m) is not None for r in runs)]


def trend_chart(
    runs: Sequence[Entry],
    slug: str = "trend",
    regressions: Sequence[Regression] | None = None,
    metric: str = PEAK.name,
    max_points: int | None = None,
    styles: Styles | None = None,
    metrics: Sequence[str] | None = None,
    made: dict[tuple[str, str], Any] | None = None,
) -> Chart:
    """Throughput over time, a line per series (the detector's); regressions marked in red.

    `metrics`: the metrics offered (each the runs carry; `metric` where none is given), the
    first drawn first and the rest a pick away: each metric's lines are traces of their own
    (`meta.when.metric`; `meta.shown` is how each is drawn once picked: ARCHITECTURE.md,
    Publishing and redaction), with the top series picked fairly per metric.
    `regressions` found over a larger set of whole series (the site finds them once for
    every page) are kept where their run is among `runs` and their step is in the metric
    drawn. `styles` may come from a caller that passes runs it has already thinned as
    `max_points` would (the site at scale): `Styles.of` the unthinned runs, whose set of
    models, machines and precisions a thinned history may not hold. `made`: each run's
    point (`point_data`), kept by a caller that draws the same runs on several trends.
    """
    offered = [m for m in (metrics or [metric]) if any(r.get(m) is not None for r in runs)]
    offered = offered or [metrics[0] if metrics else metric]
    if styles is None:
        styles = Styles.of(r for r in runs if any(r.get(m) is not None for m in offered))
    if regressions is None:
        regressions = find_regressions(runs)
    if max_points is not None:
        runs = thin(runs, offered, max_points, {g.run["run_id"] for g in regressions})
    traces: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    choices: list[dict[str, Any]] = []
    layout: dict[str, Any] = {}
    made = {} if made is None else made  # a run's point, once for every metric's lines
    for index, drawn_metric in enumerate(offered):
        part, part_rows, part_layout = _trend_part(
            runs, drawn_metric, regressions, styles, first=index == 0, made=made
        )
        if index == 0:
            layout, rows = part_layout, part_rows
        if len(offered) > 1:
            for trace in part:
                shown = trace.get("visible", True)
                trace["meta"] = {**trace.get("meta", {}), "when": {"metric": drawn_metric},
                                 "shown": shown}  # fmt: skip
                trace["visible"] = shown if index == 0 else False
        traces += part
        choices.append(
            {
                "name": drawn_metric,
                "title": METRIC_TITLES[drawn_metric],
                "axis": "yaxis",
                "layout": part_layout["yaxis"],
                "chart_title": part_layout["title"]["text"],
            }
        )
    if len(choices) > 1:
        layout["meta"] = {**layout.get("meta", {}), "metrics": choices}
        _share_points(traces)
    return Chart(
        slug,
        "Throughput over time",
        {"data": traces, "layout": layout},
        rows,
        csv_columns("timestamp", "tok_per_sec", "regression"),
        note="" if rows else "No successful runs in this selection yet.",
    )


def _share_points(traces: list[dict[str, Any]]) -> None:
    """A later metric's line over the same runs as a line of an earlier one carries only its
    y: `meta.like` names the trace whose x and customdata it shares (benchlab.js copies them
    back), so a trend of four metrics weighs little more than one."""
    seen: dict[tuple[str, ...], int] = {}
    for index, trace in enumerate(traces):
        if trace["name"] == "regression":
            continue
        runs = tuple(point[3] for point in trace["customdata"])
        held = seen.setdefault(runs, index)
        if held != index:
            del trace["x"], trace["customdata"]
            trace["meta"] = {**trace["meta"], "like": held}


def thin(
    runs: Sequence[Entry], metrics: Sequence[str], limit: int, flagged: set[str]
) -> list[Entry]:
    """Each series' runs that carry one of `metrics`, downsampled (`downsample`) on the
    first of them it carries, the `flagged` runs kept: one set of points for every metric
    a trend draws, as the site thins each history once (`SiteContext.trend`)."""
    series: dict[str, list[Entry]] = defaultdict(list)
    for run in runs:
        series[series_of(run)].append(run)
    out: list[Entry] = []
    for members in series.values():
        carried = [m for m in metrics if any(r.get(m) is not None for r in members)]
        if not carried:
            continue
        members.sort(key=lambda r: (r["timestamp"], r["run_id"]))
        drawn = [r for r in members if any(r.get(m) is not None for m in carried)]
        keep = {r["run_id"] for r in downsample(drawn, limit, carried[0])}
        out += [r for r in drawn if r["run_id"] in keep or r["run_id"] in flagged]
    return out


def _trend_part(
    runs: Sequence[Entry],
    metric: str,
    regressions: Sequence[Regression],
    styles: Styles,
    first: bool,
    made: dict[tuple[str, str], Any] | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    """One metric's lines over time, its regression markers, CSV rows (the first metric's
    only: the chart's CSV is of the metric drawn first) and layout. `made`: each run's
    point, shared by every metric's lines of one trend."""
    series: dict[str, list[Entry]] = defaultdict(list)
    for run in runs:
        if run.get(metric) is not None:
            series[series_of(run)].append(run)
    lines = sorted(series.values(), key=lambda members: sort_key(members[0]))
    present = {r["run_id"] for members in lines for r in members}
    regressions = [
        g for g in regressions
        if g.run["run_id"] in present and getattr(g.step, "metric", metric) == metric
        and g.run.get(metric) is not None
    ]  # fmt: skip
    flagged = {g.run["run_id"] for g in regressions}
    traces = []
    rows: list[dict[str, Any]] = []
    unit = unit_of(metric) or "tok/s"
    for members in lines:
        members.sort(key=lambda r: (r["timestamp"], r["run_id"]))
        traces.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": esc(styles.name(members[0])),
                "x": [r["timestamp"] for r in members],
                "y": [r[metric] for r in members],
                "customdata": [_point(r, made) for r in members],
                **styles.line(members[0]),
                "hovertemplate": HOVER_RUN + f"<br><b>%{{y:,.1f}} {unit}</b><extra></extra>",
            }
        )
        if not first:
            continue
        rows.extend(
            csv_row(
                r,
                timestamp=r["timestamp"],
                tok_per_sec=r[metric],
                regression=r["run_id"] in flagged,
            )
            for r in members
        )
    title = "Throughput over time" if first else f"{METRIC_TITLES[metric]} over time"
    layout = base_layout(title, "Run time (UTC)", METRIC_TITLES[metric])
    log_y_if_wide(layout, [r[metric] for members in lines for r in members])
    date_axis(layout["xaxis"], [r["timestamp"] for members in lines for r in members])
    stepped = {series_of(g.run) for g in regressions}
    top(traces, layout, fair_scores(lines, stepped, metric))
    kept = {point[7] for trace in traces for point in trace["customdata"][:1]}
    regressions = [g for g in regressions if series_of(g.run) in kept]
    if regressions:
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": "regression",
                "x": [g.run["timestamp"] for g in regressions],
                "y": [g.run[metric] for g in regressions],
                "customdata": [
                    point_data(g.run, round(100 * g.drop, 1), esc(step_versions(g.step)))
                    for g in regressions
                ],
                "marker": {
                    "symbol": "x-thin-open",
                    "size": 14,
                    "color": "#c8423c",
                    "line": {"width": 3, "color": "#c8423c"},
                },
                "hovertemplate": HOVER_RUN
                + f"<br><b>regression: -%{{customdata[{EXTRA}]}}%</b> vs the runs before"
                + f"<br>%{{customdata[{EXTRA + 1}]}}<extra></extra>",
            }
        )
    return traces, rows, layout


MAX_POINTS = 300
"""A history longer than this is drawn downsampled (`downsample`): a page stays light at any
catalog size."""


def fair_scores(lines: Sequence[Sequence[Entry]], stepped: set[str], metric: str) -> list[float]:
    """The order a trend chart picks its series in, as scores (`layout.top`): those with a
    regression first, then each machine's fastest (newest value), then each machine's
    second, and so on. Picked by speed alone, a fleet's top series were all one fast
    machine's, and every other machine was missing from the chart."""
    newest = [members[-1].get(metric) or 0.0 for members in lines]
    ranked = sorted(range(len(lines)), key=lambda i: (series_of(lines[i][0]) not in stepped,
                                                      -newest[i], i))  # fmt: skip
    taken: dict[str, int] = defaultdict(int)
    place: dict[int, tuple[int, int, int]] = {}
    for position, i in enumerate(ranked):
        machine = lines[i][0]["machine_id"]
        round_no = 0 if series_of(lines[i][0]) in stepped else 1 + taken[machine]
        taken[machine] += round_no > 0
        place[i] = (round_no, position, i)
    rank = {i: p for p, i in enumerate(sorted(place, key=place.__getitem__))}
    return [-float(rank[i]) for i in range(len(lines))]


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


BAND_SDS = 2.0
"""The noise band's half-width in robust standard deviations of the segment's own runs
(1.4826 x their median absolute deviation): about 95% of a steady segment's runs fall
inside it, whatever that series' noise."""


def series_chart(
    runs: Sequence[Entry],
    steps: Sequence[Step],
    slug: str,
    metric: str = PEAK.name,
    band_sds: float = BAND_SDS,
    made: dict[tuple[str, str], Any] | None = None,
) -> Chart:
    """One series over time (asv's per-benchmark graph): its points (each opens its run
    page), a +-stddev band where runs measured one, each segment between the detector's
    confirmed steps drawn as a level line (its median) inside a noise band from the
    segment's own spread (median +- `band_sds` robust sd), and the steps themselves marked,
    with the version before and after in the hover. Runs marked as outliers
    (`stats.is_outlier`) are drawn apart as hollow crosses and left out of the line, the
    levels and the bands. `made`: each run's `point_data` and CSV columns, kept by the caller
    for the charts of one series page (a run is on most of them; each is made once)."""
    everything = [r for r in runs if r.get(metric) is not None]
    outliers = [r for r in everything if is_outlier(r)]
    history = [r for r in everything if not is_outlier(r)]
    total = len(history)
    drawn = downsample(history)
    wanted = {s.first_bad_run for s in steps}
    present = {r["run_id"] for r in drawn}
    drawn += [r for r in history if r["run_id"] in wanted and r["run_id"] not in present]
    drawn.sort(key=lambda r: (r["timestamp"], r["run_id"]))
    y = [r[metric] for r in drawn]
    unit = unit_of(metric) or ""
    traces = _stddev_band(drawn, metric)
    traces.append(
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": "runs",
            "x": [r["timestamp"] for r in drawn],
            "y": y,
            "customdata": [_point(r, made) for r in drawn],
            "line": {"color": RUNS_COLOR, "width": 1.5},
            "marker": {"size": 6, "color": RUNS_COLOR},
            "hovertemplate": HOVER_RUN + f"<br><b>%{{y:,.2f}} {unit}</b><br>click: run page"
            "<extra></extra>",
        }
    )
    shaky = [r for r in drawn if is_unstable(r)]
    if shaky:
        traces.append(_unstable_trace(shaky, metric, unit))
    if outliers:
        traces.append(_outlier_trace(outliers[-MAX_POINTS:], metric, unit))
    by_id = {r["run_id"]: r for r in history}
    marked = [s for s in steps if s.first_bad_run in by_id]
    if marked:
        traces.append(_steps_trace(marked, by_id, metric))
    shapes = _noise_bands(history, marked, by_id, metric, band_sds)
    shapes += [_step_line(s) for s in marked]
    title = f"{METRIC_TITLES[metric].replace(' tokens/s', '').split(',')[0]} over time"
    if len(drawn) < total:
        title += f" ({len(drawn)} of {total} runs drawn; older runs as bucket medians)"
    layout = base_layout(title, "Run time (UTC)", METRIC_TITLES[metric])
    date_axis(layout["xaxis"], [r["timestamp"] for r in everything])
    layout["shapes"] = shapes
    log_y_if_wide(layout, y)
    layout["annotations"] = [
        {
            "text": f"level: median per segment · band: ±{band_sds:g} robust sd",
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
    column = "tok_per_sec" if unit == "tok/s" else metric
    rows = [_row(r, column, r[metric], made) for r in drawn]
    return Chart(
        slug,
        title,
        {"data": traces, "layout": layout},
        rows,
        csv_columns("timestamp", column),
        note="" if rows else f"No run of this series reports {METRIC_TITLES[metric].lower()}.",
    )


def _point(run: Entry, made: dict[tuple[str, str], Any] | None) -> list[Any]:
    """`point_data(run)`, made once per run where the caller keeps `made`."""
    if made is None:
        return point_data(run)
    key = ("point", run["run_id"])
    found = made.get(key)
    if found is None:
        found = made[key] = point_data(run)
    return found


def _row(
    run: Entry, column: str, value: Any, made: dict[tuple[str, str], Any] | None
) -> dict[str, Any]:
    """`csv_row(run, timestamp=..., column=value)`, its shared columns (the run's label and
    version) made once per run where the caller keeps `made`."""
    if made is None:
        return csv_row(run, timestamp=run["timestamp"], **{column: value})
    key = ("row", run["run_id"])
    shared = made.get(key)
    if shared is None:
        shared = made[key] = csv_row(run, timestamp=run["timestamp"])
    return {**shared, column: value}


RUNS_COLOR = PALETTE[0]
OUTLIER_COLOR = PALETTE[5]
BAND_FILL = "rgba(0,158,115,0.13)"
"""The band in the palette's bluish green (PALETTE[2]), light enough for the points."""
LEVEL_COLOR = PALETTE[2]


def _outlier_trace(runs: Sequence[Entry], metric: str, unit: str) -> dict[str, Any]:
    """Runs marked as outliers: hollow crosses apart from the line, the mark's reason in
    the hover; they count in no level, band or best."""
    return {
        "type": "scatter",
        "mode": "markers",
        "name": "marked outliers",
        "x": [r["timestamp"] for r in runs],
        "y": [r[metric] for r in runs],
        "customdata": [
            point_data(r, esc(r.get("outlier_reason") or "no reason given")) for r in runs
        ],
        "marker": {
            "symbol": "x-open",
            "size": 12,
            "color": OUTLIER_COLOR,
            "line": {"width": 2, "color": OUTLIER_COLOR},
        },
        "hovertemplate": HOVER_RUN + f"<br><b>%{{y:,.2f}} {unit}</b><br><b>outlier</b>: "
        f"%{{customdata[{EXTRA}]}} (left out of levels, bands and best)<extra></extra>",
    }


def robust_sd(values: Sequence[float]) -> float:
    """1.4826 x the median absolute deviation: a normal sample's sd, not moved by a few
    wild runs. Where more than half the runs sit on the median (MAD 0: a series that
    alternates between two readings), 1.2533 x the mean absolute deviation from the median
    stands in, so a band is never narrower than the spread the runs show. 0 for fewer than
    two values."""
    if len(values) < 2:
        return 0.0
    centre = median(values)
    deviations = [abs(v - centre) for v in values]
    mad = median(deviations)
    if mad > 0:
        return 1.4826 * mad
    return 1.2533 * sum(deviations) / len(deviations)


def segments(
    history: Sequence[Entry], marked: Sequence[Step], by_id: dict[str, Entry]
) -> list[tuple[int, int]]:
    """[lo, hi) index ranges of `history` between its confirmed steps (the detector's
    segmentation), oldest first."""
    index = {r["run_id"]: i for i, r in enumerate(history)}
    cuts = sorted(
        {
            index[s.first_bad_run]
            for s in marked
            if s.status == "confirmed" and s.first_bad_run in index
        }
    )
    bounds = [0, *cuts, len(history)]
    return [(lo, hi) for lo, hi in pairwise(bounds) if hi > lo]


def _unstable_trace(runs: Sequence[Entry], metric: str, unit: str) -> dict[str, Any]:
    """Unstable runs ringed in amber over their points: a number from noisy repeats is
    drawn, but not mistaken for a steady one."""
    return {
        "type": "scatter",
        "mode": "markers",
        "name": "unstable runs",
        "x": [r["timestamp"] for r in runs],
        "y": [r[metric] for r in runs],
        "customdata": [point_data(r) for r in runs],
        "marker": {
            "symbol": "circle-open",
            "size": 14,
            "color": "#d97706",
            "line": {"width": 2, "color": "#d97706"},
        },
        "hovertemplate": HOVER_RUN + f"<br><b>%{{y:,.2f}} {unit}</b><br>{UNSTABLE_TITLE}"
        "<extra></extra>",
    }


def _stddev_band(drawn: Sequence[Entry], metric: str) -> list[dict[str, Any]]:
    """A filled +-stddev band under the points, where the drawn runs measured one: two
    traces, the upper edge (no legend) and the lower filled up to it."""
    spread = get(metric).spread  # the stddev of its repeats (peak aggregate has none)
    if not spread or all(r.get(spread) is None for r in drawn):
        return []
    banded = [r for r in drawn if r.get(spread) is not None]
    return [
        {
            "type": "scatter",
            "mode": "lines",
            "name": "+1 stddev",
            "x": [r["timestamp"] for r in banded],
            "y": [r[metric] + r[spread] for r in banded],
            "line": {"width": 0},
            "hoverinfo": "skip",
            "showlegend": False,
        },
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
        },
    ]


def _step_color(step: Step) -> str:
    return _STEP_COLORS["suspect" if step.status == "suspect" else step.kind]


def _steps_trace(marked: Sequence[Step], by_id: dict[str, Entry], metric: str) -> dict[str, Any]:
    """The detector's steps as markers on their first bad runs; the hover says the change,
    the confidence and the version either side."""
    return {
        "type": "scatter",
        "mode": "markers",
        "name": "detected step",
        "x": [s.first_bad_timestamp for s in marked],
        "y": [by_id[s.first_bad_run][metric] for s in marked],
        "customdata": [
            point_data(
                by_id[s.first_bad_run],
                f"{s.status} {s.kind} {100 * s.change:+.1f}%",
                esc(step_versions(s)),
                f"{s.confidence:.3f}",
            )
            for s in marked
        ],
        "marker": {
            "symbol": "x-thin-open",
            "size": 16,
            "line": {"width": 3},
            "color": [_step_color(s) for s in marked],
        },
        "hovertemplate": HOVER_RUN
        + f"<br><b>%{{customdata[{EXTRA}]}}</b>"
        + f" (confidence %{{customdata[{EXTRA + 2}]}})"
        + f"<br>%{{customdata[{EXTRA + 1}]}}<extra></extra>",
    }


def _noise_bands(
    history: Sequence[Entry],
    marked: Sequence[Step],
    by_id: dict[str, Entry],
    metric: str,
    band_sds: float,
) -> list[dict[str, Any]]:
    """Each segment's level (its median, a solid line) inside its noise band (median +-
    `band_sds` robust sd of the segment's own runs): a noisy series gets a wide band, a
    quiet one a narrow band. `history` holds no marked outlier."""
    shapes: list[dict[str, Any]] = []
    for lo, hi in segments(history, marked, by_id):
        values = [r[metric] for r in history[lo:hi]]
        centre = median(values)
        half = band_sds * robust_sd(values)
        x0, x1 = history[lo]["timestamp"], history[hi - 1]["timestamp"]
        shapes.append(
            {
                "type": "rect",
                "xref": "x",
                "yref": "y",
                "x0": x0,
                "x1": x1,
                "y0": max(centre - half, 0.0),
                "y1": centre + half,
                "fillcolor": BAND_FILL,
                "line": {"width": 0},
                "layer": "below",
                "name": "noise band",
            }
        )
        shapes.append(
            {
                "type": "line",
                "xref": "x",
                "yref": "y",
                "x0": x0,
                "x1": x1,
                "y0": centre,
                "y1": centre,
                "line": {"width": 2, "color": LEVEL_COLOR},
                "layer": "below",
                "name": "level",
            }
        )
    return shapes


def _step_line(step: Step) -> dict[str, Any]:
    """A dashed vertical line at a step's first bad run."""
    return {
        "type": "line",
        "xref": "x",
        "yref": "paper",
        "x0": step.first_bad_timestamp,
        "x1": step.first_bad_timestamp,
        "y0": 0,
        "y1": 1,
        "line": {"color": _step_color(step), "width": 1, "dash": "dash"},
    }


def builds_chart(runs: Sequence[Entry], slug: str, metric: str = PEAK.name) -> Chart:
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
        "customdata": [
            point_data(r, len(by_version[v])) for r, v in zip(newest, order, strict=True)
        ],
        "marker": {"size": 8, "color": "#8a5cc2"},
        "line": {"color": "#8a5cc2"},
        "hovertemplate": "<b>%{x}</b><br>median <b>%{y:,.2f} tok/s</b> over "
        f"%{{customdata[{EXTRA}]}} run(s)<br>newest run %{{customdata[3]}}<extra></extra>",
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
