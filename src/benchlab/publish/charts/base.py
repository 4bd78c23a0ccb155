"""What every chart is made of: the runs it shows (ok, filtered, newest per series), their
labels and styles, the customdata every point carries and the CSV row of each, the
regressions it marks and the batch curves it reads, and `Chart` itself."""

from __future__ import annotations

import html
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from benchlab.catalog.format import Entry
from benchlab.catalog.read import entry_curve
from benchlab.errors import StoreError
from benchlab.identity import series_id, series_label, series_of, version_label
from benchlab.layout import read_json
from benchlab.models import BatchResults
from benchlab.publish.charts.layout import DASHES, PALETTE, SYMBOLS
from benchlab.query.filters import Filters, chronological, select
from benchlab.regress import Step, detect, sort_key


def shown(runs: Iterable[Entry], filters: Filters | None = None) -> list[Entry]:
    """The ok runs `filters` admit, oldest first: a failed run never reaches a chart."""
    return chronological(select(runs, replace(filters or Filters(), status="ok")))


def throughput(run: Entry) -> float | None:
    """The headline number of a table row: peak aggregate tok/s, else decode tok/s. Charts
    never mix the two on one axis: they take a `metric` (`METRIC_TITLES`)."""
    peak = run.get("peak_tok_per_sec")
    return peak if peak is not None else run.get("decode_tok_per_sec")


@dataclass(frozen=True)
class Styles:
    """Colour by model, dash and marker by precision: the same model is the same colour on
    every chart of a page, and a precision is told apart without colour (print, colour
    blindness). Where every run is of one model (a model's page) colour goes to the
    machine instead, and names leave the model out (`name`)."""

    key: str
    colors: dict[str, str]
    dashes: dict[str, str]
    symbols: dict[str, str]

    @classmethod
    def of(cls, runs: Iterable[Entry]) -> Styles:
        runs = list(runs)
        models = sorted({r["model"] for r in runs})
        key = "model" if len(models) > 1 else "machine_id"
        names = sorted({r[key] for r in runs})
        precisions = sorted({r["precision"] for r in runs})
        return cls(
            key,
            {m: PALETTE[i % len(PALETTE)] for i, m in enumerate(names)},
            {p: DASHES[i % len(DASHES)] for i, p in enumerate(precisions)},
            {p: SYMBOLS[i % len(SYMBOLS)] for i, p in enumerate(precisions)},
        )

    def color(self, run: Entry) -> str:
        return self.colors[run[self.key]]

    def name(self, run: Entry, machine: bool = True) -> str:
        """The series label, less the model where the colour key is the machine."""
        if self.key == "model":
            return label(run, machine=machine)
        fields: dict[str, Any] = {**run, "model_id": None, "model": None}
        if not machine:
            fields["machine_id"] = None
        return series_label(fields)

    def line(self, run: Entry, color: str | None = None) -> dict[str, Any]:
        color = color or self.color(run)
        return {
            "line": {"color": color, "dash": self.dashes[run["precision"]]},
            "marker": {"color": color, "symbol": self.symbols[run["precision"]], "size": 6},
        }


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


def label(run: Entry, machine: bool = True) -> str:
    """`identity.series_label` with the model's display name (what the site's pages and
    filters call it), optionally without the machine: an x axis of machines says that."""
    shown_fields: dict[str, Any] = {**run, "model_id": None}
    if not machine:
        shown_fields["machine_id"] = None
    return series_label(shown_fields)


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
        return 1.0 - self.after / self.before if self.before else 0.0


def find_regressions(runs: Iterable[Entry]) -> list[Regression]:
    """The regressions `benchlab.regress.detect` finds in the runs' series, oldest first."""
    runs = list(runs)
    by_id = {r["run_id"]: r for r in runs}
    found = []
    for step in detect(runs):
        run = by_id.get(step.first_bad_run)
        value = throughput(run) if run is not None else None
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


def point_data(run: Entry, *more: Any) -> list[Any]:
    return [
        esc(run["machine_id"]),
        esc(run["model"]),
        esc(run["precision"]),
        run["run_id"],
        run["timestamp"],
        esc(label(run)),
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


def csv_row(run: Entry, **values: Any) -> dict[str, Any]:
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
