"""A chart's outputs: its JSON for the page, its CSV, png/svg through kaleido, a standalone
html page, and `bench chart` writing them."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchlab.errors import ConfigError, StoreError
from benchlab.files import check_output, prepare_write
from benchlab.layout import atomic_write_text
from benchlab.publish.charts.base import Chart
from benchlab.publish.charts.kinds import CHART_KINDS, FORMATS, build_charts
from benchlab.publish.data import PublicData
from benchlab.publish.jsontext import dumps
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
    config = dict(PLOTLY_CONFIG)
    config["toImageButtonOptions"] = {
        **PLOTLY_CONFIG["toImageButtonOptions"],
        "filename": chart.slug,
    }
    data = [compact_trace(trace) for trace in chart.figure["data"]]
    payload = {"data": data, "layout": chart.figure["layout"], "config": config}
    text = dumps(payload, sort_keys=True)
    # Keep "</script>" and friends from closing an inline script early.
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


COMPACT_KEY = "blcd"
"""The trace key of a compacted `customdata` (`compact_trace`); benchlab.js expands it."""


def _dumps(value: Any) -> str:
    return dumps(value)


def _shared_prefix(values: list[str]) -> str:
    """The characters every value starts with (not path components: run ids and times)."""
    low, high = min(values), max(values)
    size = 0
    while size < min(len(low), len(high)) and low[size] == high[size]:
        size += 1
    return low[:size]


def _encode(values: list[Any]) -> tuple[dict[str, Any] | None, list[Any]]:
    """One varying customdata field of a trace's points, written the shortest of three ways:
    as is (None), as indexes into its distinct values ({"v": values}: a label that changes
    twice in a series), or less the prefix every value shares ({"p": prefix}: run ids
    `<machine>-<model>-<precision>-...` and timestamps of one series)."""
    best: tuple[int, dict[str, Any] | None, list[Any]] = (len(_dumps(values)), None, values)
    distinct = list(dict.fromkeys(_dumps(v) for v in values))
    if len(distinct) < len(values):
        index = {text: i for i, text in enumerate(distinct)}
        shared = [json.loads(text) for text in distinct]
        carried = [index[_dumps(v)] for v in values]
        size = len(_dumps(shared)) + len(_dumps(carried)) + 6
        best = min(best, (size, {"v": shared}, carried), key=lambda b: b[0])
    if all(isinstance(v, str) for v in values):
        prefix = _shared_prefix(values)
        if prefix:
            carried = [v[len(prefix) :] for v in values]
            size = len(_dumps(prefix)) + len(_dumps(carried)) + 6
            best = min(best, (size, {"p": prefix}, carried), key=lambda b: b[0])
    return best[1], best[2]


def compact_trace(trace: dict[str, Any]) -> dict[str, Any]:
    """The trace as written to a page: each point's customdata less what every point of the
    trace shares (machine, model, precision, label, version, series id on a series' trace),
    written once under `COMPACT_KEY` as {"row": a point with the shared fields, "vary": the
    indexes each point still carries, "enc": how each carried field is written
    (`_encode`)}. benchlab.js puts every point's full customdata back before plotly or the
    filters see the trace, so hover, click-through, filters and downloads read what they
    always read; at 10,000 runs the chart files were 70-80% repeated customdata without it.
    A trace whose points differ in length stays as it is, and so does one the compact form
    would not make smaller."""
    points = trace.get("customdata")
    if not isinstance(points, list) or len(points) < 2:
        return trace
    if not all(isinstance(p, list) and len(p) == len(points[0]) for p in points):
        return trace
    first = points[0]
    vary = [i for i in range(len(first)) if any(p[i] != first[i] for p in points)]
    row = [None if i in vary else value for i, value in enumerate(first)]
    encoded = [_encode([p[i] for p in points]) for i in vary]
    carried = [list(values) for values in zip(*(c for _, c in encoded), strict=True)]
    shared = {"row": row, "vary": vary, "enc": [e for e, _ in encoded]}
    if not vary:
        carried = [[] for _ in points]
    if len(_dumps([carried, shared])) + len(COMPACT_KEY) + 4 >= len(_dumps(points)):
        return trace
    compacted = {k: v for k, v in trace.items() if k != "customdata"}
    compacted["customdata"] = carried
    compacted[COMPACT_KEY] = shared
    return compacted


def expand_trace(trace: dict[str, Any]) -> dict[str, Any]:
    """`compact_trace` undone, as benchlab.js does it: for tests and readers of the files."""
    compact = trace.get(COMPACT_KEY)
    if not compact:
        return trace
    expanded = {k: v for k, v in trace.items() if k != COMPACT_KEY}
    points = []
    for values in trace["customdata"]:
        point = list(compact["row"])
        for index, enc, value in zip(compact["vary"], compact["enc"], values, strict=True):
            if enc is None:
                point[index] = value
            elif "p" in enc:
                point[index] = enc["p"] + value
            else:
                point[index] = enc["v"][value]
        points.append(point)
    expanded["customdata"] = points
    return expanded


def chart_csv(chart: Chart) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(chart.columns), lineterminator="\n")
    writer.writeheader()
    for row in chart.rows:
        writer.writerow({k: ("" if row.get(k) is None else row.get(k)) for k in chart.columns})
    return buffer.getvalue()


def write_images(charts: Sequence[Chart], paths: Sequence[Path], fmt: str) -> None:
    """PNG/SVG through kaleido, all figures in one browser session."""
    # plotly ships no type information (no py.typed, no stubs package).
    import plotly.graph_objects as go  # type: ignore[import-untyped]
    import plotly.io as pio  # type: ignore[import-untyped]

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
    # No link between the repository root and a chart (ARCHITECTURE.md, One reader and one
    # writer path): a committed link at charts/ must not send the files elsewhere.
    root = check_output(output)
    for path in paths:
        prepare_write(path, root)
    if fmt in ("png", "svg"):
        write_images(charts, paths, fmt)
        return paths
    texts = [chart_csv(c) if fmt == "csv" else chart_page(c) for c in charts]
    for path, text in zip(paths, texts, strict=True):
        atomic_write_text(path, text, root=root)
    if fmt == "html":
        copy_assets(paths[0].parent, root=root)
    return paths


def chart_page(chart: Chart) -> str:
    """A standalone chart page; plotly.min.js and benchlab.js are loaded from beside it."""
    from jinja2 import Environment, PackageLoader
    from markupsafe import Markup

    env = Environment(loader=PackageLoader("benchlab.publish", "templates"), autoescape=True)
    return env.get_template("chart.html.j2").render(chart=chart, data=Markup(chart_json(chart)))
