"""Bar charts across machines: throughput (or decode) per machine at its best, prefill vs
decode, and cost per million tokens. Bars always stand on a linear axis from zero."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from benchlab.catalog.format import Entry
from benchlab.metrics import DECODE, PEAK, PREFILL
from benchlab.publish.charts.base import (
    EXTRA,
    HOVER_RUN,
    Chart,
    csv_columns,
    csv_row,
    esc,
    latest_by_series,
    peer_groups,
    point_data,
    throughput,
)
from benchlab.publish.charts.layout import base_layout
from benchlab.publish.charts.levels import machine_chart
from benchlab.publish.charts.palette import PALETTE
from benchlab.publish.data import PublicData


def throughput_chart(
    runs: Sequence[Entry], slug: str = "throughput", metric: str = PEAK.name
) -> Chart:
    """`metric` per machine, each at its best series' current level (`levels.machine_chart`;
    one machine: a bar per series). Peak aggregate and decode are two charts, never one
    axis."""
    return machine_chart(runs, slug, (metric,))


def prefill_decode_chart(runs: Sequence[Entry], slug: str = "prefill-decode") -> Chart:
    """Prefill vs decode tok/s per machine, grouped bars (newest run per series)."""
    latest = [
        r
        for r in latest_by_series(runs).values()
        if r.get(PREFILL.name) is not None or r.get(DECODE.name) is not None
    ]
    groups = peer_groups(latest)
    traces = []
    for phase, attr, color in (
        ("prefill", PREFILL.name, PALETTE[0]),
        ("decode", DECODE.name, PALETTE[1]),
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
            prefill_tok_per_sec=r.get(PREFILL.name),
            decode_tok_per_sec=r.get(DECODE.name),
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
        csv_columns(PREFILL.name, DECODE.name),
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
