"""The roofline charts: each series' achieved rate against the fastest rate its machine
allows (ARCHITECTURE.md, "How close to the hardware"): decode against the memory bandwidth
(MBU), and prefill against the peak compute (MFU).

Both axes are tokens per second, so one diagonal serves every model and machine: a point on
it uses all of the bound (100%), a point far under it leaves speed on the table, and a
point over the dashed 110% line cannot have happened. A reader sees at once which machines
are near their limit; a series whose machine has no figure is left out and counted in the
note, never drawn at a guessed ceiling.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from benchlab.catalog.format import Entry
from benchlab.machines.roofline import IMPOSSIBLE_OVER
from benchlab.metrics import DECODE, PREFILL
from benchlab.publish.charts.base import (
    Chart,
    csv_columns,
    csv_row,
    esc,
    latest_by_series,
    point_data,
)
from benchlab.publish.charts.layout import base_layout
from benchlab.query.roofline import judge_entry, judge_prefill_entry

if TYPE_CHECKING:
    from benchlab.models import MachineSpecs

Judged = tuple[float, float, str]
"""(ceiling tok/s, share of the bound in %, the figure's source) of one run."""


@dataclass(frozen=True)
class Roof:
    """One roofline: the rate it judges, against which bound, in whose words."""

    metric: str
    judge: Callable[[Entry, Mapping[str, MachineSpecs]], Judged | None]
    title: str
    x_title: str
    y_title: str
    share: str
    """The share's name: MBU or MFU."""
    source_column: str
    no_figure: str
    """The note where no series could be judged."""


def _by_bandwidth(run: Entry, specs: Mapping[str, MachineSpecs]) -> Judged | None:
    found = judge_entry(run, specs)
    return None if found is None else (found.ceiling_tok_per_sec, found.mbu_pct,
                                       found.bandwidth_source)  # fmt: skip


def _by_compute(run: Entry, specs: Mapping[str, MachineSpecs]) -> Judged | None:
    found = judge_prefill_entry(run, specs)
    return None if found is None else (found.ceiling_tok_per_sec, found.mfu_pct,
                                       found.peak_source)  # fmt: skip


DECODE_ROOF = Roof(
    DECODE.name,
    _by_bandwidth,
    "Decode against the memory-bandwidth ceiling",
    "Ceiling: bandwidth ÷ bytes per token (tok/s)",
    "Achieved decode (tok/s, higher is better)",
    "MBU",
    "bandwidth",
    "No series here has both a decode rate and a machine with a memory-bandwidth figure "
    "(bench machines measure, or bench machines set ID --mem-bandwidth).",
)
PREFILL_ROOF = Roof(
    PREFILL.name,
    _by_compute,
    "Prefill against the peak-compute ceiling",
    "Ceiling: peak FLOP/s ÷ FLOPs per prompt token (tok/s)",
    "Achieved prefill (tok/s, higher is better)",
    "MFU",
    "compute",
    "No series here has both a prefill rate with a parameter count and a machine with a "
    "peak-compute figure (bench machines measure, or bench machines set ID --peak-tflops).",
)


def roofline_chart(
    runs: Sequence[Entry],
    specs: Mapping[str, MachineSpecs],
    slug: str = "roofline",
    roof: Roof = DECODE_ROOF,
) -> Chart:
    """A point per series (its newest run), a trace per machine; hover names the share of
    the bound and the figure's source."""
    by_machine: dict[str, list[tuple[Entry, float, float, str]]] = {}
    unjudged = 0
    for run in latest_by_series(runs).values():
        if run.get(roof.metric) is None:
            continue
        found = roof.judge(run, specs)
        if found is None:
            unjudged += 1
            continue
        by_machine.setdefault(str(run["machine_id"]), []).append((run, *found))
    traces: list[dict[str, Any]] = []
    rows = []
    top = 0.0
    for machine, points in sorted(by_machine.items()):
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": esc(machine),
                "x": [round(ceiling, 2) for _, ceiling, _, _ in points],
                "y": [run[roof.metric] for run, _, _, _ in points],
                "text": [
                    esc(f"{run['model']} {run['precision']}: {roof.share} {share:.0f}% of {source}")
                    for run, _, share, source in points
                ],
                "customdata": [point_data(run) for run, _, _, _ in points],
                "marker": {"size": 10},
                "hovertemplate": "%{text}<br>ceiling %{x:,.1f} tok/s, achieved "
                "<b>%{y:,.1f} tok/s</b><extra>%{fullData.name}</extra>",
            }
        )
        for run, ceiling, share, source in points:
            top = max(top, ceiling, float(run[roof.metric]))
            rows.append(
                csv_row(
                    run,
                    **{
                        roof.metric: run[roof.metric],
                        "ceiling_tok_per_sec": round(ceiling, 2),
                        f"{roof.share.lower()}_pct": round(share, 1),
                        roof.source_column: source,
                    },
                )
            )
    if traces:
        edge = top * 1.15
        guides = (
            (1.0, f"{roof.share} 100%", "solid"),
            (IMPOSSIBLE_OVER, "impossible above", "dash"),
        )
        for part, name, dash in guides:
            traces.insert(
                0,
                {
                    "type": "scatter",
                    "mode": "lines",
                    "name": name,
                    "x": [0, edge],
                    "y": [0, edge * part],
                    "line": {"color": "#9ca3af", "dash": dash, "width": 1},
                    "hoverinfo": "skip",
                },
            )
    layout = base_layout(roof.title, roof.x_title, roof.y_title)
    missing = (
        f" {unjudged} series left out: their machine has no {roof.source_column} figure."
        if unjudged
        else ""
    )
    return Chart(
        slug,
        roof.title,
        {"data": traces, "layout": layout},
        rows,
        csv_columns(
            roof.metric, "ceiling_tok_per_sec", f"{roof.share.lower()}_pct", roof.source_column
        ),
        note=roof.no_figure if not rows else missing,
    )
