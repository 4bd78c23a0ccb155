"""The static site: Jinja2 renders Markdown pages from the public catalog, MkDocs builds them.

Pages are pure functions of the public files (catalog.json, machines/catalog.json,
machines/<id>/specs.json): never of private runs, never of the wall clock. Jinja2 runs with
autoescape on, and every user string that lands in Markdown also has its Markdown
punctuation escaped (`md` filter), so a model named `<script>alert(1)</script>` is text.

Chart data goes to one small script per chart (bl/charts/<slug>.js) rather than inline in
the page, so pages stay light and the search index holds words, not numbers; plotly.min.js
is copied once into bl/. A series and a run each have ONE page for all of them
(series.html?s=<id>, run.html?s=<series>&r=<run>), drawn by its script from a data file per
series (bl/series/<id>.js, bl/runs/<id>.js): MkDocs builds a handful of pages at any size.

Runs are the catalog reader's entry dicts (`publish.data.PublicData`), filtered by the one
filter and grouped by the one series key, like every chart: a table of the newest run per
series has a row per thread count and workload shape, and every row that shows a run shows
its version (backend version, build, revision). The regressions page lists the steps the
regression detector finds, in the detector's series, with the version before and after.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from benchlab.publish.context import SiteContext
from benchlab.publish.data import PublicData
from benchlab.publish.links import series_file
from benchlab.publish.pages.compare import compare_page
from benchlab.publish.pages.health import health_page
from benchlab.publish.pages.home import home_page
from benchlab.publish.pages.machines import machine_pages
from benchlab.publish.pages.models import model_pages
from benchlab.publish.pages.regressions import regressions_page
from benchlab.publish.pages.runs import run_page, run_part
from benchlab.publish.pages.series import series_index, series_page, series_part
from benchlab.publish.workers import After, beside

__all__ = ["Rendered", "render_pages", "series_file"]
"""`series_file` too: the catalog gate's tests check page names through it."""


@dataclass
class Rendered:
    """The generated docs: Markdown pages and chart scripts by relative path, plus nav."""

    files: dict[str, str]
    nav: list[Any]


PagesDone = Callable[[Rendered], None]
"""Called once the pages (and every file MkDocs reads) are rendered, before the series and
run data files: `publish.build` starts MkDocs there, so it builds while the data is made."""


def render_pages(
    data: PublicData, workers: int | None = None, pages_done: PagesDone | None = None
) -> Rendered:
    """Every generated page, chart script and run data file, as text by relative path.

    Every page is bounded whatever the catalog's size: histories are downsampled
    (`charts.MAX_POINTS`, `TREND_POINTS`), tables are limited (their hidden rows counted),
    aggregates (newest run per series, best per machine) stand in for run lists, and run
    details are published only for the runs some page shows. Runs are read in groups made
    once (`Groups`), light entries (`publish.data.load_site`) are made full only where a
    page shows them, the step detector runs per series in `workers` processes
    (`detect_per_series`), and the machine and model pages render in a second process
    beside the others (`workers.beside`). Series and runs have one page each, drawn from a
    data file per series (`pages.series`, `pages.runs`)."""
    # The runs live to the end of the render: frozen, the cycle collector never walks the
    # million of them again, and forked workers do not copy the pages it would touch.
    gc.freeze()
    try:
        return _render(data, workers, pages_done)
    finally:
        gc.unfreeze()


def _render(data: PublicData, workers: int | None, pages_done: PagesDone | None) -> Rendered:
    site = SiteContext(data, workers, detect=False)  # `beside` splits the detector's pass
    # The pages render in two processes, each taking the next: the costliest first (the
    # compare page at a million runs, the machine pages at 1,000), then a page per model.
    pages = (compare_page, machine_pages, health_page, home_page, regressions_page)
    models = [partial(model_pages, which=slice(i, i + 1)) for i in range(len(site.pages.models))]
    # The series data and run files split between the same two processes, the other's part
    # begun while this one hands the pages to MkDocs; a large site's worker processes (which
    # a forked process may not start) render them all instead.
    split = site.workers <= 1
    after = After(then=series_part, last=run_part) if split else None
    with beside(site, (*pages, *models), after) as partner:
        rendered = partner.results
        machine_nav = rendered[pages.index(machine_pages)]
        model_nav = [item for nav in rendered[len(pages) :] for item in nav]
        series_page(site)
        run_page(site)
        nav: list[Any] = [
            {"What changed": "index.md"},
            {"Compare": "compare.md"},
            {"Regressions": "regressions.md"},
            {"Fleet health": "health.md"},
        ]
        if machine_nav:
            nav.append({"Machines": machine_nav})
        if model_nav:
            nav.append({"Models": model_nav})
        if pages_done is not None:
            pages_done(Rendered(files=dict(site.files), nav=nav))
        series_index(site)
        series_part(site, 0, 2 if split else 1)
        run_part(site, 0, 2 if split else 1)
        partner.finish()
    return Rendered(files=site.files, nav=nav)
