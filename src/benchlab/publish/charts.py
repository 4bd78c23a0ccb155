"""Plotly figures of the public catalog, and their html/png/svg/csv outputs.

Charts read only public files (catalog.json, the machine inventory, public specs) so that the
site can be built in CI from what git tracks. Every figure is a pure function of the catalog:
series and points are sorted, div ids are fixed, and nothing carries a wall-clock stamp, so
two builds from one catalog are byte-identical (invariant 7).

Every point carries `customdata = [machine, model, precision, run_id, ...]`; the small
filter script shipped with the site (assets/benchlab.js) filters any chart by those three
fields without knowing which kind of chart it is.
"""

from __future__ import annotations

import csv
import html
import io
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchlab.errors import ConfigError, StoreError
from benchlab.layout import Store, atomic_write_bytes, atomic_write_text, read_json, read_model
from benchlab.models import (
    BatchCurvePoint,
    BatchResults,
    Catalog,
    CatalogEntry,
    MachineInventory,
    MachineSpecs,
)

CHART_KINDS = ("throughput", "scaling", "prefill-decode", "cost", "trend")
"""Chart kinds in the order the site and `bench chart` show them."""

FORMATS = ("html", "png", "svg", "csv")

REGRESSION_THRESHOLD = 0.10
"""A run more than 10 % below the median of the runs before it is marked a regression."""
REGRESSION_WINDOW = 5

_FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"
_PALETTE = (
    "#3b6fd4",
    "#e07b39",
    "#3a9d5d",
    "#c8423c",
    "#8a5cc2",
    "#2aa3b3",
    "#b8913a",
    "#d45c9a",
    "#5f6b7a",
    "#7fb13a",
)


# --- inputs ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class PublicData:
    """Everything a chart or page may read: the public catalog, inventory and specs."""

    catalog: Catalog
    inventory: MachineInventory
    specs: Mapping[str, MachineSpecs] = field(default_factory=dict)
    store_root: Path | None = None

    def cost_per_hour(self, machine_id: str) -> float | None:
        entry = self.inventory.machines.get(machine_id)
        if entry is not None and entry.cost_per_hour is not None:
            return entry.cost_per_hour
        spec = self.specs.get(machine_id)
        return spec.cost_per_hour if spec is not None else None

    def machine_ids(self) -> list[str]:
        ids = set(self.catalog.machines) | set(self.inventory.machines)
        ids.update(run.machine_id for run in self.catalog.runs)
        return sorted(ids)


def load_public(store: Store) -> PublicData:
    """Read the public files of a store; a store without catalog.json is a one-line error."""
    if not store.catalog_path.is_file():
        raise StoreError(f"{store.catalog_path}: file not found; run `bench catalog build` first")
    catalog = read_model(store.catalog_path, Catalog)
    inventory = (
        read_model(store.inventory_path, MachineInventory)
        if store.inventory_path.is_file()
        else MachineInventory()
    )
    specs: dict[str, MachineSpecs] = {}
    machine_ids = set(catalog.machines) | set(inventory.machines)
    machine_ids.update(run.machine_id for run in catalog.runs)
    for machine_id in sorted(machine_ids):
        path = store.public_specs(machine_id)
        if path.is_file():
            specs[machine_id] = read_model(path, MachineSpecs)
    return PublicData(catalog=catalog, inventory=inventory, specs=specs, store_root=store.root)


# --- selection ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Selection:
    """The seed's chart flags: which runs a chart shows."""

    model: str | None = None
    precision: str | None = None
    machines: tuple[str, ...] = ()
    run_type: str | None = None

    def admits(self, run: CatalogEntry) -> bool:
        if self.model and self.model not in (run.model, run.model_id):
            return False
        if self.precision and run.precision != self.precision:
            return False
        if self.machines and run.machine_id not in self.machines:
            return False
        return not (self.run_type and run.mode != self.run_type and self.run_type not in run.tags)


def select(runs: Iterable[CatalogEntry], selection: Selection) -> list[CatalogEntry]:
    """The ok runs a selection admits, sorted by (timestamp, run id)."""
    chosen = [r for r in runs if r.status == "ok" and selection.admits(r)]
    return sorted(chosen, key=lambda r: (r.timestamp, r.run_id))


def throughput(run: CatalogEntry) -> float | None:
    """The headline number: peak aggregate tok/s, else decode tok/s."""
    if run.peak_tok_per_sec is not None:
        return run.peak_tok_per_sec
    return run.decode_tok_per_sec


def series_key(run: CatalogEntry) -> tuple[str, str, str]:
    return (run.machine_id, run.model, run.precision)


def latest_by_series(runs: Iterable[CatalogEntry]) -> dict[tuple[str, str, str], CatalogEntry]:
    """The newest run of each (machine, model, precision); ties go to the larger run id."""
    latest: dict[tuple[str, str, str], CatalogEntry] = {}
    for run in runs:
        key = series_key(run)
        best = latest.get(key)
        if best is None or (run.timestamp, run.run_id) > (best.timestamp, best.run_id):
            latest[key] = run
    return dict(sorted(latest.items()))


# --- regressions ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Regression:
    """A run where a series stepped down: `value` is the run's own throughput (where the
    marker sits), `before`/`after` the medians either side of the step."""

    run: CatalogEntry
    value: float
    before: float
    after: float

    @property
    def drop(self) -> float:
        return 1.0 - self.after / self.before if self.before else 0.0


def find_regressions(runs: Iterable[CatalogEntry]) -> list[Regression]:
    """Regressions over the runs' histories: `benchlab.regress` step detection when it is
    there, else a simple drop below the median of the runs before."""
    runs = list(runs)
    try:
        from benchlab import regress
    except ImportError:
        return median_drops(runs)
    by_id = {r.run_id: r for r in runs}
    found = []
    for step in regress.detect(runs):
        run = by_id.get(step.first_bad_run)
        if step.kind != "regression" or run is None or throughput(run) is None:
            continue
        found.append(Regression(run, throughput(run) or 0.0, step.before, step.after))
    return sorted(found, key=lambda g: (g.run.timestamp, g.run.run_id))


def median_drops(
    runs: Iterable[CatalogEntry],
    threshold: float = REGRESSION_THRESHOLD,
    window: int = REGRESSION_WINDOW,
) -> list[Regression]:
    """Runs whose throughput fell more than `threshold` below the median of the `window`
    runs of the same series before them: a marker for the eye when no detector is there."""
    history: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    found: list[Regression] = []
    for run in sorted(runs, key=lambda r: (r.timestamp, r.run_id)):
        value = throughput(run)
        if run.status != "ok" or value is None:
            continue
        previous = history[series_key(run)]
        if previous:
            baseline = statistics.median(previous[-window:])
            if baseline > 0 and value < baseline * (1.0 - threshold):
                found.append(Regression(run, value, baseline, value))
        previous.append(value)
    return sorted(found, key=lambda g: (g.run.timestamp, g.run.run_id))


# --- batch curves ---------------------------------------------------------------------------


def batch_curve(run: CatalogEntry, store_root: Path | None = None) -> list[BatchCurvePoint]:
    """A run's batch curve: the catalog's compact copy, else the public run copy's batch.json.

    Private run dirs are never read: only a path under runs/public/ qualifies.
    """
    if run.batch_curve:
        return sorted(run.batch_curve, key=lambda p: p.batch)
    if store_root is None or not run.path or not run.path.startswith("runs/public/"):
        return []
    path = store_root / run.path / "batch.json"
    if ".." in Path(run.path).parts or not path.is_file():
        return []
    try:
        batch = BatchResults.model_validate(read_json(path))
    except (StoreError, ValueError):
        return []
    return sorted(
        (BatchCurvePoint(batch=p.batch, agg_tok_per_sec=p.agg_tok_per_sec) for p in batch.points),
        key=lambda p: p.batch,
    )


# --- charts ---------------------------------------------------------------------------------


@dataclass
class Chart:
    """One chart: its figure as plain JSON, its rows for CSV, and a note for empty charts."""

    slug: str
    title: str
    figure: dict[str, Any]
    rows: list[dict[str, Any]]
    columns: tuple[str, ...]
    note: str = ""

    @property
    def empty(self) -> bool:
        return not self.rows


def _layout(title: str, x_title: str, y_title: str, **extra: Any) -> dict[str, Any]:
    layout: dict[str, Any] = {
        "title": {"text": title, "x": 0.0, "xanchor": "left", "font": {"size": 16}},
        "font": {"family": _FONT, "size": 13, "color": "#1f2937"},
        "colorway": list(_PALETTE),
        "paper_bgcolor": "rgba(0,0,0,0)",
        "plot_bgcolor": "#ffffff",
        "margin": {"l": 64, "r": 16, "t": 48, "b": 64},
        "height": 420,
        "hovermode": "closest",
        "legend": {
            "orientation": "v",
            "x": 1.01,
            "xanchor": "left",
            "y": 1.0,
            "font": {"size": 11},
            "itemclick": "toggle",
            "itemdoubleclick": "toggleothers",
        },
        "xaxis": {
            "title": {"text": x_title},
            "gridcolor": "#e5e7eb",
            "linecolor": "#9ca3af",
            "automargin": True,
        },
        "yaxis": {
            "title": {"text": y_title},
            "gridcolor": "#e5e7eb",
            "linecolor": "#9ca3af",
            "rangemode": "tozero",
            "automargin": True,
        },
    }
    layout.update(extra)
    return layout


def esc(text: str) -> str:
    """Plotly renders labels as a small HTML dialect: user strings go in as entities."""
    return html.escape(text, quote=False)


def _label(model: str, precision: str) -> str:
    return f"{esc(model)} · {esc(precision)}"


def _custom(run: CatalogEntry, *more: Any) -> list[Any]:
    return [
        esc(run.machine_id),
        esc(run.model),
        esc(run.precision),
        run.run_id,
        run.timestamp,
        *more,
    ]


_HOVER_RUN = (
    "<b>%{customdata[0]}</b><br>%{customdata[1]} · %{customdata[2]}<br>"
    "run %{customdata[3]}<br>%{customdata[4]}"
)


def throughput_chart(runs: Sequence[CatalogEntry], slug: str = "throughput") -> Chart:
    """Throughput vs machine: newest run per series, bars grouped by model and precision."""
    latest = {k: r for k, r in latest_by_series(runs).items() if throughput(r) is not None}
    groups: dict[tuple[str, str], list[CatalogEntry]] = defaultdict(list)
    for run in latest.values():
        groups[(run.model, run.precision)].append(run)
    traces = []
    if len({r.machine_id for r in latest.values()}) == 1:
        # One machine (its own page): one bar per model and precision reads better.
        groups = {("", ""): sorted(latest.values(), key=lambda r: (r.model, r.precision))}
    for (model, precision), members in sorted(groups.items()):
        members.sort(key=lambda r: (r.machine_id, r.model, r.precision))
        single = (model, precision) == ("", "")
        traces.append(
            {
                "type": "bar",
                "name": esc(members[0].machine_id) if single else _label(model, precision),
                "x": [_label(r.model, r.precision) if single else r.machine_id for r in members],
                "y": [throughput(r) for r in members],
                "customdata": [_custom(r) for r in members],
                "hovertemplate": _HOVER_RUN + "<br><b>%{y:,.1f} tok/s</b><extra></extra>",
            }
        )
    rows = [
        {
            "machine": r.machine_id,
            "model": r.model,
            "precision": r.precision,
            "tok_per_sec": throughput(r),
            "run_id": r.run_id,
            "timestamp": r.timestamp,
        }
        for r in latest.values()
    ]
    figure = {
        "data": traces,
        "layout": _layout(
            "Throughput by machine (newest run, log scale)",
            "",
            "Aggregate tokens/s",
            barmode="group",
        ),
    }
    figure["layout"]["yaxis"].update(type="log", dtick=1)
    figure["layout"]["yaxis"].pop("rangemode")
    return Chart(
        slug,
        "Throughput by machine",
        figure,
        rows,
        ("machine", "model", "precision", "tok_per_sec", "run_id", "timestamp"),
        note="" if rows else "No successful runs with a throughput yet.",
    )


WIDE_RANGE = 20.0
"""A y range wider than this ratio is drawn on a log axis, or the slow series lie flat at 0."""


def _log_y_if_wide(layout: dict[str, Any], values: Sequence[float | None]) -> None:
    positive = [v for v in values if v is not None and v > 0]
    if positive and max(positive) / min(positive) > WIDE_RANGE:
        layout["yaxis"]["type"] = "log"
        layout["yaxis"].pop("rangemode", None)


def scaling_chart(
    runs: Sequence[CatalogEntry], store_root: Path | None = None, slug: str = "scaling"
) -> Chart:
    """Batch size vs aggregate throughput, a line per machine (and model, precision)."""
    traces = []
    rows = []
    for run in latest_by_series(runs).values():
        points = batch_curve(run, store_root)
        if not points:
            continue
        traces.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": f"{esc(run.machine_id)} · {_label(run.model, run.precision)}",
                "x": [p.batch for p in points],
                "y": [p.agg_tok_per_sec for p in points],
                "customdata": [_custom(run, p.batch) for p in points],
                "hovertemplate": _HOVER_RUN
                + "<br>batch %{x}: <b>%{y:,.1f} tok/s</b><extra></extra>",
            }
        )
        rows.extend(
            {
                "machine": run.machine_id,
                "model": run.model,
                "precision": run.precision,
                "batch": p.batch,
                "agg_tok_per_sec": p.agg_tok_per_sec,
                "run_id": run.run_id,
            }
            for p in points
        )
    layout = _layout("Scaling with batch size", "Batch size", "Aggregate tokens/s")
    _log_y_if_wide(layout, [row["agg_tok_per_sec"] for row in rows])
    layout["xaxis"]["type"] = "log"
    layout["xaxis"]["dtick"] = 0.30102999566398120  # log10(2): ticks at powers of two
    return Chart(
        slug,
        "Scaling with batch size",
        {"data": traces, "layout": layout},
        rows,
        ("machine", "model", "precision", "batch", "agg_tok_per_sec", "run_id"),
        note="" if rows else "No run in this selection has batch points.",
    )


def prefill_decode_chart(runs: Sequence[CatalogEntry], slug: str = "prefill-decode") -> Chart:
    """Prefill vs decode tok/s per machine, grouped bars (newest run per series)."""
    latest = [
        r
        for r in latest_by_series(runs).values()
        if r.prefill_tok_per_sec is not None or r.decode_tok_per_sec is not None
    ]
    pairs = sorted({(r.model, r.precision) for r in latest})
    traces = []
    for phase, attr, color in (
        ("prefill", "prefill_tok_per_sec", "#3b6fd4"),
        ("decode", "decode_tok_per_sec", "#e07b39"),
    ):
        for index, (model, precision) in enumerate(pairs):
            members = [
                r
                for r in latest
                if (r.model, r.precision) == (model, precision) and getattr(r, attr) is not None
            ]
            if not members:
                continue
            members.sort(key=lambda r: r.machine_id)
            name = phase if len(pairs) == 1 else f"{phase} · {_label(model, precision)}"
            traces.append(
                {
                    "type": "bar",
                    "name": name,
                    "legendgroup": phase,
                    "x": [r.machine_id for r in members],
                    "y": [getattr(r, attr) for r in members],
                    "customdata": [_custom(r) for r in members],
                    "marker": {"color": color, "opacity": 1.0 - 0.25 * (index % 3)},
                    "hovertemplate": _HOVER_RUN
                    + f"<br>{phase}: <b>%{{y:,.1f}} tok/s</b><extra></extra>",
                }
            )
    rows = [
        {
            "machine": r.machine_id,
            "model": r.model,
            "precision": r.precision,
            "prefill_tok_per_sec": r.prefill_tok_per_sec,
            "decode_tok_per_sec": r.decode_tok_per_sec,
            "run_id": r.run_id,
        }
        for r in latest
    ]
    layout = _layout("Prefill vs decode (log scale)", "", "Tokens/s", barmode="group")
    layout["yaxis"].update(type="log", dtick=1)
    layout["yaxis"].pop("rangemode")
    return Chart(
        slug,
        "Prefill vs decode",
        {"data": traces, "layout": layout},
        rows,
        (
            "machine",
            "model",
            "precision",
            "prefill_tok_per_sec",
            "decode_tok_per_sec",
            "run_id",
        ),
        note="" if rows else "No run in this selection reports prefill or decode speed.",
    )


def cost_per_million(cost_per_hour: float, tok_per_sec: float) -> float:
    """USD per one million tokens at a sustained rate."""
    return cost_per_hour / (tok_per_sec * 3600.0) * 1_000_000.0


def cost_rows(runs: Sequence[CatalogEntry], data: PublicData) -> list[dict[str, Any]]:
    """The cost table: one row per series whose machine has a cost_per_hour, cheapest first."""
    rows = []
    for run in latest_by_series(runs).values():
        rate = throughput(run)
        price = data.cost_per_hour(run.machine_id)
        if rate is None or rate <= 0 or price is None:
            continue
        rows.append(
            {
                "machine": run.machine_id,
                "model": run.model,
                "precision": run.precision,
                "tok_per_sec": rate,
                "cost_per_hour": price,
                "usd_per_million_tokens": round(cost_per_million(price, rate), 6),
                "run_id": run.run_id,
            }
        )
    return sorted(rows, key=lambda r: (r["usd_per_million_tokens"], r["machine"], r["model"]))


def cost_chart(runs: Sequence[CatalogEntry], data: PublicData, slug: str = "cost") -> Chart:
    """$ per 1M tokens per machine, bars grouped by model and precision (lower is better)."""
    rows = cost_rows(runs, data)
    by_run = {r.run_id: r for r in runs}
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[(row["model"], row["precision"])].append(row)
    traces = []
    for (model, precision), members in sorted(groups.items()):
        members.sort(key=lambda r: r["machine"])
        traces.append(
            {
                "type": "bar",
                "name": _label(model, precision),
                "x": [m["machine"] for m in members],
                "y": [m["usd_per_million_tokens"] for m in members],
                "customdata": [
                    _custom(by_run[m["run_id"]], m["cost_per_hour"], m["tok_per_sec"])
                    for m in members
                ],
                "hovertemplate": _HOVER_RUN
                + "<br>$%{customdata[5]:.2f}/h at %{customdata[6]:,.1f} tok/s"
                + "<br><b>$%{y:.4f} per 1M tokens</b><extra></extra>",
            }
        )
    layout = _layout("Cost per million tokens (lower is better)", "", "USD / 1M tokens")
    layout["barmode"] = "group"
    return Chart(
        slug,
        "Cost per million tokens",
        {"data": traces, "layout": layout},
        rows,
        (
            "machine",
            "model",
            "precision",
            "tok_per_sec",
            "cost_per_hour",
            "usd_per_million_tokens",
            "run_id",
        ),
        note="" if rows else "No machine in this selection has a cost_per_hour in its specs.",
    )


def trend_chart(
    runs: Sequence[CatalogEntry],
    slug: str = "trend",
    regressions: Sequence[Regression] | None = None,
) -> Chart:
    """Throughput over time per (machine, model, precision); regressions marked in red."""
    series: dict[tuple[str, str, str], list[CatalogEntry]] = defaultdict(list)
    for run in runs:
        if throughput(run) is not None:
            series[series_key(run)].append(run)
    traces = []
    rows = []
    for key, members in sorted(series.items()):
        members.sort(key=lambda r: (r.timestamp, r.run_id))
        traces.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": f"{esc(key[0])} · {_label(key[1], key[2])}",
                "x": [r.timestamp for r in members],
                "y": [throughput(r) for r in members],
                "customdata": [_custom(r) for r in members],
                "marker": {"size": 6},
                "hovertemplate": _HOVER_RUN + "<br><b>%{y:,.1f} tok/s</b><extra></extra>",
            }
        )
    if regressions is None:
        regressions = find_regressions(runs)
    flagged = {g.run.run_id for g in regressions}
    for _key, members in sorted(series.items()):
        rows.extend(
            {
                "machine": r.machine_id,
                "model": r.model,
                "precision": r.precision,
                "timestamp": r.timestamp,
                "tok_per_sec": throughput(r),
                "regression": r.run_id in flagged,
                "run_id": r.run_id,
            }
            for r in members
        )
    if regressions:
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": "regression",
                "x": [g.run.timestamp for g in regressions],
                "y": [g.value for g in regressions],
                "customdata": [_custom(g.run, round(100 * g.drop, 1)) for g in regressions],
                "marker": {
                    "symbol": "x-thin-open",
                    "size": 14,
                    "color": "#c8423c",
                    "line": {"width": 3, "color": "#c8423c"},
                },
                "hovertemplate": _HOVER_RUN
                + "<br><b>regression: -%{customdata[5]}%</b> vs recent median<extra></extra>",
            }
        )
    layout = _layout("Throughput over time", "Run time (UTC)", "Tokens/s")
    _log_y_if_wide(layout, [row["tok_per_sec"] for row in rows])
    layout["xaxis"]["type"] = "date"
    return Chart(
        slug,
        "Throughput over time",
        {"data": traces, "layout": layout},
        rows,
        ("machine", "model", "precision", "timestamp", "tok_per_sec", "regression", "run_id"),
        note="" if rows else "No successful runs in this selection yet.",
    )


def build_charts(
    data: PublicData,
    selection: Selection | None = None,
    kinds: Sequence[str] = CHART_KINDS,
    prefix: str = "",
) -> list[Chart]:
    """The charts of a selection, in CHART_KINDS order; slugs get `prefix` for unique ids."""
    runs = select(data.catalog.runs, selection or Selection())
    makers = {
        "throughput": lambda: throughput_chart(runs, prefix + "throughput"),
        "scaling": lambda: scaling_chart(runs, data.store_root, prefix + "scaling"),
        "prefill-decode": lambda: prefill_decode_chart(runs, prefix + "prefill-decode"),
        "cost": lambda: cost_chart(runs, data, prefix + "cost"),
        "trend": lambda: trend_chart(runs, prefix + "trend"),
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


# --- outputs --------------------------------------------------------------------------------

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


def plotly_js_path() -> Path:
    """plotly.min.js as the installed plotly package ships it (never a CDN)."""
    import plotly

    path = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    if not path.is_file():
        raise StoreError(f"{path}: plotly.min.js missing from the plotly package")
    return path


def asset_path(name: str) -> Path:
    return Path(__file__).parent / "assets" / name


def write_images(charts: Sequence[Chart], paths: Sequence[Path], fmt: str) -> None:
    """PNG/SVG through kaleido, all figures in one browser session."""
    import plotly.graph_objects as go
    import plotly.io as pio

    figures = []
    for chart in charts:
        figure = go.Figure(chart.figure)
        figure.update_layout(paper_bgcolor="#ffffff", width=960, height=540)
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
    selection: Selection,
    output: Path,
    fmt: str | None = None,
    kinds: Sequence[str] | None = None,
) -> list[Path]:
    """`bench chart`: one file when `output` ends in a format's suffix, else a directory of
    every chosen chart. Everything is computed before the first byte is written."""
    suffix = output.suffix.lower().lstrip(".")
    single = suffix in FORMATS
    fmt = fmt or (suffix if single else "html")
    if single and suffix != fmt:
        raise ConfigError(f"--output {output}: ends in .{suffix} but --format is {fmt}")
    if single:
        kinds = kinds or (["scaling"] if selection.run_type == "batch" else ["throughput"])
        if len(kinds) > 1:
            raise ConfigError(f"--output {output}: one file holds one chart; give a directory")
    charts = build_charts(data, selection, kinds or CHART_KINDS)
    paths = [output] if single else [output / f"{c.slug}.{fmt}" for c in charts]
    if fmt in ("png", "svg"):
        write_images(charts, paths, fmt)
        return paths
    texts = [chart_csv(c) if fmt == "csv" else chart_page(c) for c in charts]
    for path, text in zip(paths, texts, strict=True):
        atomic_write_text(path, text)
    if fmt == "html":
        folder = paths[0].parent
        for src, name in (
            (plotly_js_path(), "plotly.min.js"),
            (asset_path("benchlab.js"), "benchlab.js"),
            (asset_path("benchlab.css"), "benchlab.css"),
        ):
            target = folder / name
            if not target.is_file() or target.read_bytes() != src.read_bytes():
                atomic_write_bytes(target, src.read_bytes())
    return paths


def chart_page(chart: Chart) -> str:
    """A standalone chart page; plotly.min.js and benchlab.js are loaded from beside it."""
    from jinja2 import Environment, PackageLoader
    from markupsafe import Markup

    env = Environment(loader=PackageLoader("benchlab.publish", "templates"), autoescape=True)
    return env.get_template("chart.html.j2").render(chart=chart, data=Markup(chart_json(chart)))
