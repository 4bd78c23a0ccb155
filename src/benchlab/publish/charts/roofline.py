"""The roofline chart: each series' achieved decode against the fastest decode its machine's
memory bandwidth allows (ARCHITECTURE.md, "How close to the hardware").

Both axes are tokens per second, so one diagonal serves every model and machine: a point on
it uses all the bandwidth (MBU 100%), a point far under it leaves speed on the table, and a
point over the dashed 110% line cannot have happened. A reader sees at once which machines
are near their limit; a series whose machine has no bandwidth figure is left out and
counted in the note, never drawn at a guessed ceiling.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from benchlab.catalog.format import Entry
from benchlab.machines.roofline import IMPOSSIBLE_OVER
from benchlab.metrics import DECODE
from benchlab.publish.charts.base import (
    Chart,
    csv_columns,
    csv_row,
    esc,
    latest_by_series,
    point_data,
)
from benchlab.publish.charts.layout import base_layout
from benchlab.query.roofline import judge_entry

if TYPE_CHECKING:
    from benchlab.models import MachineSpecs


def roofline_chart(
    runs: Sequence[Entry], specs: Mapping[str, MachineSpecs], slug: str = "roofline"
) -> Chart:
    """A point per series (its newest run), a trace per machine; hover names the MBU and the
    bandwidth's source."""
    by_machine: dict[str, list[tuple[Entry, float, float, str]]] = {}
    unjudged = 0
    for run in latest_by_series(runs).values():
        if run.get(DECODE.name) is None:
            continue
        found = judge_entry(run, specs)
        if found is None:
            unjudged += 1
            continue
        by_machine.setdefault(str(run["machine_id"]), []).append(
            (run, found.ceiling_tok_per_sec, found.mbu_pct, found.bandwidth_source)
        )
    traces: list[dict[str, object]] = []
    rows = []
    top = 0.0
    for machine, points in sorted(by_machine.items()):
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": esc(machine),
                "x": [round(ceiling, 2) for _, ceiling, _, _ in points],
                "y": [run[DECODE.name] for run, _, _, _ in points],
                "text": [
                    esc(f"{run['model']} {run['precision']}: MBU {mbu:.0f}% of {source}")
                    for run, _, mbu, source in points
                ],
                "customdata": [point_data(run) for run, _, _, _ in points],
                "marker": {"size": 10},
                "hovertemplate": "%{text}<br>ceiling %{x:,.1f} tok/s, achieved "
                "<b>%{y:,.1f} tok/s</b><extra>%{fullData.name}</extra>",
            }
        )
        for run, ceiling, mbu, source in points:
            top = max(top, ceiling, float(run[DECODE.name]))
            rows.append(
                csv_row(
                    run,
                    decode_tok_per_sec=run[DECODE.name],
                    ceiling_tok_per_sec=round(ceiling, 2),
                    mbu_pct=round(mbu, 1),
                    bandwidth=source,
                )
            )
    if traces:
        edge = top * 1.15
        guides = ((1.0, "MBU 100%", "solid"), (IMPOSSIBLE_OVER, "impossible above", "dash"))
        for share, name, dash in guides:
            traces.insert(
                0,
                {
                    "type": "scatter",
                    "mode": "lines",
                    "name": name,
                    "x": [0, edge],
                    "y": [0, edge * share],
                    "line": {"color": "#9ca3af", "dash": dash, "width": 1},
                    "hoverinfo": "skip",
                },
            )
    layout = base_layout(
        "Decode against the memory-bandwidth ceiling",
        "Ceiling: bandwidth ÷ bytes per token (tok/s)",
        "Achieved decode (tok/s, higher is better)",
    )
    missing = (
        f" {unjudged} series left out: their machine has no bandwidth figure." if unjudged else ""
    )
    return Chart(
        slug,
        "Decode against the memory-bandwidth ceiling",
        {"data": traces, "layout": layout},
        rows,
        csv_columns(DECODE.name, "ceiling_tok_per_sec", "mbu_pct", "bandwidth"),
        note=(
            "No series here has both a decode rate and a machine with a memory-bandwidth "
            "figure (bench machines measure, or bench machines set ID --mem-bandwidth)."
            if not rows
            else (missing if unjudged else "")
        ),
    )
