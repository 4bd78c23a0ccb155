"""A chart's outputs: its JSON for the page, its CSV, png/svg through kaleido, a standalone
html page, and `bench chart` writing them."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchlab.errors import ConfigError, StoreError
from benchlab.layout import atomic_write_text
from benchlab.publish.charts.base import Chart
from benchlab.publish.charts.kinds import CHART_KINDS, FORMATS, build_charts
from benchlab.publish.data import PublicData
from benchlab.publish.static import copy_assets
from benchlab.query.filters import Filters

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
    metric: str | None = None,
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
    charts = build_charts(data, filters, kinds or CHART_KINDS, metric=metric)
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
