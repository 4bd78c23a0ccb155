"""What every chart is made of: the runs it shows (ok, filtered, newest per series), their
labels and styles, the customdata every point carries and the CSV row of each, the
regressions it marks and the batch curves it reads, and `Chart` itself."""

from __future__ import annotations

import functools
import html
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from benchlab.catalog.format import Entry
from benchlab.catalog.read import entry_curve
from benchlab.detect.history import sort_key
from benchlab.detect.regress import detect
from benchlab.detect.steps import Step
from benchlab.errors import StoreError
from benchlab.identity import series_id, series_label, series_of, shape, version_label
from benchlab.layout import read_json
from benchlab.metrics import DECODE, PEAK
from benchlab.models import BatchResults
from benchlab.publish.charts.palette import PALETTE, Look, assign, look
from benchlab.query.filters import Filters, chronological, select


def shown(runs: Iterable[Entry], filters: Filters | None = None) -> list[Entry]:
    """The ok runs `filters` admit, oldest first: a failed run never reaches a chart."""
    return chronological(select(runs, replace(filters or Filters(), status="ok")))


def throughput(run: Entry) -> float | None:
    """The headline number of a table row: peak aggregate tok/s, else decode tok/s. Charts
    never mix the two on one axis: they take a `metric` (`METRIC_TITLES`)."""
    peak = run.get(PEAK.name)
    return peak if peak is not None else run.get(DECODE.name)


STYLE_DIMS = ("model", "machine_id", "precision", "threads", "backend", "shape")
"""What tells two series on one chart apart, in the order colour prefers them on a tie."""


def dim_value(run: Mapping[str, Any], dim: str) -> Any:
    """A run's value along one of `STYLE_DIMS` (the workload shape as `identity.shape`)."""
    return shape(run) if dim == "shape" else run.get(dim)


def describe(run: Mapping[str, Any], dims: Sequence[str]) -> str:
    """A legend entry in words, naming only `dims`: `laptop · q4 · 2 threads`, never `t2`."""
    parts = []
    for dim in dims:
        value = dim_value(run, dim)
        if dim == "threads":
            plural = "" if value == 1 else "s"
            parts.append("threads not recorded" if value is None else f"{value} thread{plural}")
        elif dim == "shape":
            parts.append(shape_words(run) or "no shape")
        elif value is not None:
            parts.append(str(value))
    return " · ".join(parts)


def shape_words(run: Mapping[str, Any]) -> str:
    """`identity.shape` spelled out: `prompt 32, 16 generated` for `p32/n16`."""
    text = shape(run)
    prompt, gen = run.get("prompt_tokens"), run.get("gen_tokens")
    if prompt or gen:
        text = text.replace(
            f"p{prompt or 0}/n{gen or 0}", f"prompt {prompt or 0}, {gen or 0} generated"
        )
    return text


@dataclass(frozen=True)
class Styles:
    """Colour by the one field that most tells a chart's series apart (model, machine,
    precision, threads, backend or shape: whichever has the most values the palette can
    hold, `STYLE_DIMS` order on a tie; the machine where none fits), then a dash, marker
    and bar pattern of its own for each series sharing that colour (`palette.assign`). So
    four lines of one model on a machine's page differ in colour by what differs between
    them, and two series never share colour, dash and marker. Legends name only the fields
    that differ (`name`)."""

    key: str
    varying: tuple[str, ...]
    looks: dict[tuple[Any, Any], Look]

    @classmethod
    def of(cls, runs: Iterable[Mapping[str, Any]]) -> Styles:
        runs = list(runs)
        values = {dim: {_sortable(dim_value(r, dim)) for r in runs} for dim in STYLE_DIMS}
        varying = tuple(dim for dim in STYLE_DIMS if len(values[dim]) > 1)
        fits = [d for d in varying if len(values[d]) <= len(PALETTE)]
        most = max((len(values[d]) for d in fits), default=0)
        if "machine_id" in varying and len(values["machine_id"]) > most:
            # More machines than colours, and more than any field that fits has values:
            # colours still tell machines apart (they come round with the next dash), not
            # the two values of a precision.
            key = "machine_id"
        elif fits:
            key = max(fits, key=lambda d: (len(values[d]), -STYLE_DIMS.index(d)))
        elif varying:
            key = min(varying, key=lambda d: (len(values[d]), STYLE_DIMS.index(d)))
        else:
            key = "model"
        styles = cls(key, varying, {})
        styles.looks.update(assign(styles.keys(r) for r in runs))
        return styles

    def keys(self, run: Mapping[str, Any]) -> tuple[Any, Any]:
        rest = tuple(_sortable(dim_value(run, d)) for d in self.varying if d != self.key)
        return (_sortable(dim_value(run, self.key)), rest)

    def look(self, run: Mapping[str, Any]) -> Look:
        """The run's series' look; a series `of` never saw gets the next free dash of its
        colour (or the next colour), so a caller's partial view still draws distinctly."""
        key = self.keys(run)
        found = self.looks.get(key)
        if found is None:
            colors = sorted({k[0] for k in self.looks} | {key[0]}, key=str)
            within = sum(1 for k in self.looks if k[0] == key[0])
            found = self.looks[key] = look(colors.index(key[0]), within)
        return found

    def color(self, run: Mapping[str, Any]) -> str:
        return self.look(run).color

    def name(self, run: Mapping[str, Any], machine: bool = True) -> str:
        """The legend entry: the fields that differ between the chart's series, in words
        (less the machine where an axis of machines says it)."""
        dims = [d for d in self.varying if machine or d != "machine_id"]
        return describe(run, dims or ("precision", "threads"))

    def line(self, run: Mapping[str, Any], color: str | None = None) -> dict[str, Any]:
        found = self.look(run)
        color = color or found.color
        return {
            "line": {"color": color, "dash": found.dash},
            "marker": {"color": color, "symbol": found.symbol, "size": 7},
        }


def _sortable(value: Any) -> Any:
    """A hashable, comparable stand-in for a field's value (None sorts first)."""
    return "" if value is None else value if isinstance(value, (str, int, float)) else str(value)


def latest_by_series(runs: Iterable[Entry]) -> dict[str, Entry]:
    """The newest run of each series (`regress.series_of`: the detector's series), by series
    id, in the detector's reading order; ties go to the larger run id."""
    latest: dict[str, Entry] = {}
    for run in runs:
        key = series_of(run)
        best = latest.get(key)
        if best is None or (run["timestamp"], run["run_id"]) > (best["timestamp"], best["run_id"]):
            latest[key] = run
    return {series_of(run): run for run in sorted(latest.values(), key=sort_key)}


LABEL_FIELDS = (
    "machine_id", "model", "precision", "backend", "threads",
    "prompt_tokens", "gen_tokens", "depth", "n_batch", "n_ubatch", "flash_attn",
)  # fmt: skip
"""Every field a label or a legend's words read (`identity.series_label`, `describe`)."""


def label(run: Mapping[str, Any], machine: bool = True) -> str:
    """`identity.series_label` with the model's display name (what the site's pages and
    filters call it), optionally without the machine: an x axis of machines says that."""
    return _words(tuple(run.get(name) for name in LABEL_FIELDS), machine)[0]


@functools.lru_cache(maxsize=16384)
def _words(fields: tuple[Any, ...], machine: bool) -> tuple[str, str]:
    """A series' label and its hover line, from its `LABEL_FIELDS`: the same few hundred
    series label every point of every chart of a site (tens of thousands of points)."""
    shown: dict[str, Any] = dict(zip(LABEL_FIELDS, fields, strict=True))
    if not machine:
        shown["machine_id"] = None
    text = series_label(shown)
    return text, f"{esc(text)}<br>{esc(describe(shown, ('threads', 'shape')))}"


def peer_key(run: Entry) -> tuple[str, str]:
    """The series less its machine: one bar group or trace across machines (a sort key)."""
    peer = {**run, "machine_id": None}
    return (label(run, machine=False), series_id(peer))


@dataclass(frozen=True)
class Regression:
    """A run where a series stepped down: `value` is the run's own throughput (where the
    marker sits), `before`/`after` the medians either side of the step, `step` the
    detector's finding (with the versions either side)."""

    run: Entry
    value: float
    before: float
    after: float
    step: Step

    @property
    def drop(self) -> float:
        """The step's size, positive whichever way its metric is better (a latency's
        regression rises)."""
        return abs(1.0 - self.after / self.before) if self.before else 0.0


def find_regressions(runs: Iterable[Entry]) -> list[Regression]:
    """The regressions `benchlab.detect.regress.detect` finds in the runs' series, oldest first: in
    every metric each series carries, each its own history (ARCHITECTURE.md, Regression
    detection), each marker at its run's value of the step's metric."""
    runs = list(runs)
    by_id = {r["run_id"]: r for r in runs}
    found = []
    for step in detect(runs, None):
        run = by_id.get(step.first_bad_run)
        value = run.get(step.metric) if run is not None else None
        if step.kind != "regression" or run is None or value is None:
            continue
        found.append(Regression(run, value, step.before, step.after, step))
    return sorted(found, key=lambda g: (g.run["timestamp"], g.run["run_id"]))


def curve(run: Entry, store_root: Path | None = None) -> list[dict[str, Any]]:
    """A run's batch curve sorted by batch: the catalog's copy (`entry_curve`), else the
    promoted public copy's batch.json. Private run dirs are never read: only a path under
    runs/public/ qualifies."""
    points = entry_curve(run)
    if points:
        return sorted(points, key=lambda p: p["batch"])
    path_text = run.get("path")
    if store_root is None or not path_text or not path_text.startswith("runs/public/"):
        return []
    path = store_root / path_text / "batch.json"
    if ".." in Path(path_text).parts or not path.is_file():
        return []
    try:
        batch = BatchResults.model_validate(read_json(path))
    except (StoreError, ValueError):
        return []
    return sorted(
        ({"batch": p.batch, "agg_tok_per_sec": p.agg_tok_per_sec} for p in batch.points),
        key=lambda p: p["batch"],
    )


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


def esc(text: str) -> str:
    """Plotly renders labels as a small HTML dialect: user strings go in as entities."""
    return html.escape(text, quote=False)


def point_data(run: Mapping[str, Any], *more: Any) -> list[Any]:
    return [
        esc(run["machine_id"]),
        esc(run["model"]),
        esc(run["precision"]),
        run["run_id"],
        run["timestamp"],
        # The short label, and what its `t4 p32/n16` means in words, on the hover.
        _words(tuple(run.get(name) for name in LABEL_FIELDS), True)[1],
        esc(version_label(run) or "version not recorded"),
        series_of(run),
        *more,
    ]


HOVER_RUN = (
    "<b>%{customdata[0]}</b><br>%{customdata[1]} · %{customdata[2]}<br>%{customdata[5]}"
    "<br>%{customdata[6]}<br>run %{customdata[3]}<br>%{customdata[4]}"
)
EXTRA = 8
"""Index of the first chart-specific customdata field (7 is the series id: with the run id
at 3 it names the run page a click on the point opens)."""


def csv_row(run: Mapping[str, Any], **values: Any) -> dict[str, Any]:
    """The CSV columns every chart shares: who, which series, which version, which run."""
    return {
        "machine": run["machine_id"],
        "model": run["model"],
        "precision": run["precision"],
        "threads": run.get("threads"),
        "series": label(run),
        **values,
        "version": version_label(run),
        "run_id": run["run_id"],
    }


def csv_columns(*values: str) -> tuple[str, ...]:
    return ("machine", "model", "precision", "threads", "series", *values, "version", "run_id")


def peer_groups(runs: Iterable[Entry]) -> list[tuple[str, list[Entry]]]:
    """Runs grouped by series less machine (one trace across machines), named, in order."""
    groups: dict[tuple[str, str], list[Entry]] = defaultdict(list)
    for run in runs:
        groups[peer_key(run)].append(run)
    return [
        (key[0], sorted(members, key=lambda r: r["machine_id"]))
        for key, members in sorted(groups.items())
    ]


def step_versions(step: Step) -> str:
    """`version a → b` where the step came with a new build or revision, else `same version`."""
    before = step.version_before or "not recorded"
    after = step.version_after or "not recorded"
    return f"version {before} → {after}" if step.version_changed else f"same version ({after})"
