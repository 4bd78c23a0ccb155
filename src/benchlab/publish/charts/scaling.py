"""How a series scales: with batch size (a line per series) and with thread count."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from benchlab.catalog.format import Entry
from benchlab.identity import series_id, series_label
from benchlab.publish.charts.base import (
    EXTRA,
    HOVER_RUN,
    Chart,
    Styles,
    csv_columns,
    csv_row,
    curve,
    esc,
    latest_by_series,
    point_data,
)
from benchlab.publish.charts.layout import PALETTE, base_layout, log_y_if_wide, top
from benchlab.regress import sort_key


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
    colors = {t: PALETTE[i % len(PALETTE)] for i, t in enumerate(thread_counts)}
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
                "customdata": [point_data(run, p["batch"], threads) for p in points],
                **styles.line(run, colors[threads or 0]),
                "hovertemplate": HOVER_RUN
                + f"<br>threads %{{customdata[{EXTRA + 1}]}}, batch %{{x}}: "
                + "<b>%{y:,.1f} tok/s</b><extra></extra>",
            }
        )
        rows.extend(
            csv_row(run, batch=p["batch"], agg_tok_per_sec=p["agg_tok_per_sec"]) for p in points
        )
    layout = base_layout(
        "Scaling with batch size, a colour per thread count", "Batch size", "Aggregate tokens/s"
    )
    log_y_if_wide(layout, [row["agg_tok_per_sec"] for row in rows])
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
        csv_columns("batch", "agg_tok_per_sec"),
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
                "customdata": [point_data(r) for r in members],
                **styles.line(members[0]),
                "hovertemplate": HOVER_RUN + "<br>%{x} threads: <b>%{y:,.1f} tok/s</b>"
                "<extra></extra>",
            }
        )
        rows.extend(csv_row(r, decode_tok_per_sec=r["decode_tok_per_sec"]) for r in members)
    layout = base_layout("Decode speed by thread count", "Threads", "Decode tokens/s")
    layout["xaxis"]["dtick"] = 1
    log_y_if_wide(layout, [row["decode_tok_per_sec"] for row in rows])
    top(traces, layout, [max(t["y"], default=0) for t in traces])
    return Chart(
        slug,
        "Decode speed by thread count",
        {"data": traces, "layout": layout},
        rows,
        csv_columns("decode_tok_per_sec"),
        note="" if rows else "No run in this selection reports decode speed.",
    )
