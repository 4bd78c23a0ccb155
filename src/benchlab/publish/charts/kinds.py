"""The chart kinds `bench chart` and the site draw, in the order they show them."""

from __future__ import annotations

from collections.abc import Sequence

from benchlab.catalog.format import Entry
from benchlab.errors import ConfigError
from benchlab.metrics import DECODE, PEAK
from benchlab.publish.charts.bars import cost_chart, prefill_decode_chart, throughput_chart
from benchlab.publish.charts.base import Chart, Regression, shown
from benchlab.publish.charts.history import trend_chart, trend_metrics
from benchlab.publish.charts.levels import machine_chart, present_metrics
from benchlab.publish.charts.scaling import scaling_chart, threads_chart
from benchlab.publish.data import PublicData
from benchlab.query.filters import Filters

CHART_KINDS = ("throughput", "decode", "scaling", "threads", "prefill-decode", "cost", "trend")
"""Chart kinds in the order the site and `bench chart` show them."""

FORMATS = ("html", "png", "svg", "csv")


def build_charts(
    data: PublicData,
    filters: Filters | None = None,
    kinds: Sequence[str] = CHART_KINDS,
    prefix: str = "",
    regressions: Sequence[Regression] | None = None,
    runs: Sequence[Entry] | None = None,
    metric: str | None = None,
) -> list[Chart]:
    """The charts of the runs `filters` admit, in CHART_KINDS order; slugs get `prefix` for
    unique ids. `regressions` may come precomputed over whole series (see trend_chart), and
    `runs` (`shown(data.runs, filters)`, or as much of it as the chosen kinds read) too.
    `metric` is what the throughput (by machine) and threads charts draw; without it the
    throughput chart offers every metric the runs carry (peak aggregate first) and the
    threads chart draws decode."""
    runs = shown(data.runs, filters) if runs is None else runs
    by_machine = [metric] if metric else present_metrics(runs) or [PEAK.name]
    makers = {
        "throughput": lambda: machine_chart(runs, prefix + "throughput", by_machine),
        "decode": lambda: throughput_chart(runs, prefix + "decode", DECODE.name),
        "scaling": lambda: scaling_chart(runs, data.store_root, prefix + "scaling"),
        "threads": lambda: threads_chart(runs, prefix + "threads", metric or DECODE.name),
        "prefill-decode": lambda: prefill_decode_chart(runs, prefix + "prefill-decode"),
        "cost": lambda: cost_chart(runs, data, prefix + "cost"),
        "trend": lambda: trend_chart(
            runs, prefix + "trend", regressions, metrics=trend_metrics(runs)
        ),
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
