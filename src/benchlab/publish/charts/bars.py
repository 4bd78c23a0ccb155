"""Bar charts across machines: throughput (or decode) per series, prefill vs decode, and
cost per million tokens."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from benchlab.catalog.format import Entry
from benchlab.publish.charts.base import (
    EXTRA,
    HOVER_RUN,
    Chart,
    Styles,
    csv_columns,
    csv_row,
    esc,
    label,
    latest_by_series,
    peer_groups,
    point_data,
    throughput,
)
from benchlab.publish.charts.layout import (
    METRIC_TITLES,
    PALETTE,
    WIDE_RANGE,
    base_layout,
    log_y_if_wide,
    top,
)
from benchlab.publish.data import PublicData


def throughput_chart(
    runs: Sequence[Entry], slug: str = "throughput", metric: str = "peak_tok_per_sec"
) -> Chart:
    """`metric` vs machine: newest run per series, a bar group per series less machine,
    coloured by model. Peak aggregate and decode are two charts, never one axis."""
    title_metric = METRIC_TITLES[metric]
    latest = [r for r in latest_by_series(runs).values() if r.get(metric) is not None]
    styles = Styles.of(latest)
    traces = []
    hover = HOVER_RUN + "<br><b>%{y:,.1f} tok/s</b><extra></extra>"
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
                "customdata": [point_data(r) for r in ordered],
                "marker": {"color": [styles.color(r) for r in ordered]},
                "hovertemplate": hover.replace("%{y:,.1f}", "%{x:,.1f}"),
            }
        )
    else:
        for _name, members in peer_groups(latest):
            traces.append(
                {
                    "type": "bar",
                    "name": esc(styles.name(members[0], machine=False)),
                    "x": [r["machine_id"] for r in members],
                    "y": [r[metric] for r in members],
                    "customdata": [point_data(r) for r in members],
                    "marker": {
                        "color": PALETTE[len(traces) % len(PALETTE)]
                        if styles.key != "model"
                        else styles.color(members[0]),
                        "pattern": {"shape": _pattern(styles, members[0]["precision"])},
                    },
                    "hovertemplate": hover,
                }
            )
    rows = [csv_row(r, tok_per_sec=r[metric], timestamp=r["timestamp"]) for r in latest]
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
            csv_columns("tok_per_sec", "timestamp"),
        )
    layout = base_layout(f"{short} by machine (newest run)", "", title_metric, barmode="group")
    log_y_if_wide(layout, [row["tok_per_sec"] for row in rows])
    top(traces, layout, [max(t["y"], default=0) for t in traces])
    return Chart(
        slug,
        f"{short} by machine",
        {"data": traces, "layout": layout},
        rows,
        csv_columns("tok_per_sec", "timestamp"),
        note="" if rows else f"No successful runs with {title_metric.lower()} yet.",
    )


_PATTERNS = ("", "/", ".", "x", "-", "|", "+", "\\")


def _pattern(styles: Styles, precision: str) -> str:
    """Bars have no dash: a fill pattern tells precisions apart instead."""
    return _PATTERNS[list(styles.dashes).index(precision) % len(_PATTERNS)]


def prefill_decode_chart(runs: Sequence[Entry], slug: str = "prefill-decode") -> Chart:
    """Prefill vs decode tok/s per machine, grouped bars (newest run per series)."""
    latest = [
        r
        for r in latest_by_series(runs).values()
        if r.get("prefill_tok_per_sec") is not None or r.get("decode_tok_per_sec") is not None
    ]
    groups = peer_groups(latest)
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
                    "customdata": [point_data(r) for r in members],
                    "marker": {"color": color, "opacity": 1.0 - 0.25 * (index % 3)},
                    "hovertemplate": HOVER_RUN
                    + f"<br>{phase}: <b>%{{y:,.1f}} tok/s</b><extra></extra>",
                }
            )
    rows = [
        csv_row(
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
        csv_columns("prefill_tok_per_sec", "decode_tok_per_sec"),
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
            csv_row(
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
    for name, members in peer_groups(by_run[row["run_id"]] for row in rows):
        traces.append(
            {
                "type": "bar",
                "name": esc(name),
                "x": [m["machine_id"] for m in members],
                "y": [priced[m["run_id"]]["usd_per_million_tokens"] for m in members],
                "customdata": [
                    point_data(
                        m,
                        priced[m["run_id"]]["cost_per_hour"],
                        priced[m["run_id"]]["tok_per_sec"],
                    )
                    for m in members
                ],
                "hovertemplate": HOVER_RUN
                + f"<br>$%{{customdata[{EXTRA}]:.2f}}/h"
                + f" at %{{customdata[{EXTRA + 1}]:,.1f}} tok/s"
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
        csv_columns("tok_per_sec", "cost_per_hour", "usd_per_million_tokens"),
        note="" if rows else "No machine in this selection has a cost_per_hour in its specs.",
    )
