"""How a series scales: with batch size (a line per series) and with thread count."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchlab.catalog.format import Entry
from benchlab.detect.history import sort_key
from benchlab.identity import series_id, series_label
from benchlab.metrics import DECODE, lower_is_better, unit_of
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
from benchlab.publish.charts.layout import (
    METRIC_TITLES,
    auto_log,
    base_layout,
    numeric_axis,
    pool,
)


def scaling_chart(
    runs: Sequence[Entry], store_root: Path | None = None, slug: str = "scaling"
) -> Chart:
    """Batch size vs aggregate throughput, a line per series (newest run of each), styled
    by what differs between them (`Styles`): how aggregate throughput scales with batch.
    A curve of one batch size (llama-bench's: batch 1 alone) shows no scaling and is left
    out; a chart left with no curve is empty, and the pages leave it out."""
    traces = []
    rows: list[dict[str, Any]] = []
    latest = [
        r for r in latest_by_series(runs).values()
        if len({p["batch"] for p in curve(r, store_root)}) > 1
    ]  # fmt: skip
    styles = Styles.of(latest)
    for run in sorted(latest, key=lambda r: (r.get("threads") or 0, sort_key(r))):
        points = curve(run, store_root)
        threads = run.get("threads")
        traces.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": esc(styles.name(run)),
                "x": [p["batch"] for p in points],
                "y": [p["agg_tok_per_sec"] for p in points],
                "customdata": [point_data(run, p["batch"], threads) for p in points],
                **styles.line(run),
                "hovertemplate": HOVER_RUN
                + f"<br>threads %{{customdata[{EXTRA + 1}]}}, batch %{{x}}: "
                + "<b>%{y:,.1f} tok/s</b><extra></extra>",
            }
        )
        rows.extend(
            csv_row(run, batch=p["batch"], agg_tok_per_sec=p["agg_tok_per_sec"]) for p in points
        )
    layout = base_layout("Scaling with batch size", "Batch size", "Aggregate tokens/s")
    numeric_axis(layout["xaxis"], [row["batch"] for row in rows])
    # Drawn first: the fastest line of every thread count, so each count shows by default.
    # (No legend groups: plotly stacks a group's entries in one tall column.)
    counts = [t["customdata"][0][EXTRA + 1] if t["customdata"] else None for t in traces]
    peaks = [max(t["y"], default=0.0) for t in traces]
    best: dict[int | None, float] = {}
    for count, peak in zip(counts, peaks, strict=True):
        best[count] = max(best.get(count, 0.0), peak)
    firsts = [1e12 if p == best[c] else 0.0 for p, c in zip(peaks, counts, strict=True)]
    pool(traces, layout, [f + p for f, p in zip(firsts, peaks, strict=True)])
    auto_log(layout, "yaxis", traces)
    return Chart(
        slug,
        "Scaling with batch size",
        {"data": traces, "layout": layout},
        rows,
        csv_columns("batch", "agg_tok_per_sec"),
        note="" if rows else "No run in this selection has points at two batch sizes.",
    )


def threads_chart(runs: Sequence[Entry], slug: str = "threads", metric: str = DECODE.name) -> Chart:
    """`metric` vs thread count on a numeric axis, a line per series less threads (machine,
    model, precision, shape ...), from the newest run of each series."""
    latest = [r for r in latest_by_series(runs).values() if r.get(metric) is not None]
    groups: dict[tuple[str, str], list[Entry]] = defaultdict(list)
    for run in latest:
        peer = {**run, "threads": None, "model_id": None}
        groups[(series_label(peer), series_id(peer))].append(run)
    lines = [
        sorted(members, key=lambda r: r.get("threads") or 0)
        for _, members in sorted(groups.items())
        if any(r.get("threads") is not None for r in members)
    ]
    styles = Styles.of({**m[0], "threads": None} for m in lines)
    traces = []
    rows: list[dict[str, Any]] = []
    unit = unit_of(metric)
    for members in lines:
        members = [r for r in members if r.get("threads") is not None]
        traces.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": esc(styles.name({**members[0], "threads": None})),
                "x": [r["threads"] for r in members],
                "y": [r[metric] for r in members],
                "customdata": [point_data(r) for r in members],
                **styles.line({**members[0], "threads": None}),
                "hovertemplate": HOVER_RUN + f"<br>%{{x}} threads: <b>%{{y:,.4g}} {unit}</b>"
                "<extra></extra>",
            }
        )
        rows.extend(csv_row(r, **{metric: r[metric]}) for r in members)
    short = METRIC_TITLES[metric].split(",")[0].replace(" tokens/s", "")
    layout = base_layout(f"{short} by thread count", "Threads", METRIC_TITLES[metric])
    numeric_axis(layout["xaxis"], [row["threads"] for row in rows])
    # Lines over two or more thread counts first (they show the scaling), then the best.
    sign = -1.0 if lower_is_better(metric) else 1.0
    score = [
        1e12 * (len(t["x"]) > 1) + max((sign * y for y in t["y"]), default=0.0) for t in traces
    ]
    pool(traces, layout, score)
    auto_log(layout, "yaxis", traces)
    return Chart(
        slug,
        f"{short} by thread count",
        {"data": traces, "layout": layout},
        rows,
        csv_columns(metric),
        note="" if rows else "No run in this selection records a thread count.",
    )
