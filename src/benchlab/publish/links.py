"""The site's names: page file names of machines, models and series, and the run
links pages make. File and page names derive only from checked ids (ARCHITECTURE.md,
invariant 11): a machine id passes `ids.check_id`, a series id must be `s` + 12 hex digits."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from benchlab.catalog.format import Entry
from benchlab.catalog.gate import SERIES
from benchlab.errors import StoreError
from benchlab.identity import series_of
from benchlab.ids import check_id, slug
from benchlab.publish.charts import Chart
from benchlab.publish.data import PublicData


@dataclass(frozen=True)
class Pages:
    """Page file names of machines and models (relative to their section dirs)."""

    machines: dict[str, str]
    models: dict[str, str]

    def machine(self, machine_id: str) -> str:
        return self.machines[machine_id]

    def model(self, model: str) -> str:
        return self.models[model]


def page_names(data: PublicData) -> Pages:
    machines = {m: f"{check_id(m, 'machine id')}.md" for m in data.machine_ids()}
    models: dict[str, str] = {}
    taken: set[str] = set()
    ids_of: dict[str, set[str]] = {}
    for run in data.runs:
        ids = ids_of.setdefault(run["model"], set())
        if run.get("model_id"):
            ids.add(run["model_id"])
    for name in sorted(ids_of):
        ids = ids_of[name]
        base = slug(sorted(ids)[0] if ids else name)
        candidate, n = base, 2
        while candidate in taken:
            candidate, n = f"{base}-{n}", n + 1
        taken.add(candidate)
        models[name] = f"{candidate}.md"
    return Pages(machines, models)


class Links:
    """Run pages: `run.html?s=<series>&r=<run id>`, one client-rendered page whose data is
    the series' run file (bl/runs/<series>.js). Every run a page or chart links is
    remembered here, and only those runs' details are published: bounded by what the pages
    show, not by the catalog's size."""

    def __init__(self) -> None:
        self.linked: dict[str, set[str]] = {}

    def run(self, run: Mapping[str, Any], root: str) -> str:
        sid = series_of(run)
        self.linked.setdefault(sid, set()).add(run["run_id"])
        return f"{root}run.html?s={sid}&r={run['run_id']}"

    def from_chart(self, chart: Chart) -> None:
        for trace in chart.figure["data"]:
            for point in trace.get("customdata") or ():
                if len(point) > 7 and isinstance(point[7], str) and point[7].startswith("s"):
                    self.linked.setdefault(point[7], set()).add(point[3])


def series_page_names(ok_runs: Iterable[Entry]) -> dict[str, str]:
    """Every series that has data (an ok run), each to the address of its view on the one
    series page (`series_url`, relative to the site root)."""
    return {sid: series_url(sid) for sid in sorted({series_of(r) for r in ok_runs})}


SERIES_PAGE = "series.html"
"""The one series page: it reads `?s=<series id>` and loads that series' data file."""


def series_url(sid: Any, root: str = "") -> str:
    """`<root>series.html?s=<series id>`: a series' history (the id checked like a file
    name, since the page turns it into one)."""
    return f"{root}{SERIES_PAGE}?s={series_file(sid, '')}"


_SERIES_ID = re.compile(SERIES)


def series_file(sid: Any, suffix: str) -> str:
    """The file name of a series' page or run file. Only a series id (`s` + 12 hex digits)
    names a file: the catalog gate sets aside any other, and this refuses one that got past
    it, so no id can put a file outside the site (`../../x`)."""
    if type(sid) is not str or not _SERIES_ID.match(sid):
        raise StoreError(f"series id {sid!a}: not a series id; no file is named after it")
    return f"{sid}{suffix}"
