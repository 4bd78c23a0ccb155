"""The site's tables on a 390x844 phone, in a real headless Chromium: no value out of reach.

On a generated fleet (tools/perf/make_fleet.py, then `bench catalog build`), the home page's
Fastest, Machines and Recent runs tables, a machine page's Series and History tables, a model
page's fastest tables and a series page's runs table show every value (each numeric cell's
right edge inside the 390 px viewport) without a sideways scroll: each row is a card under
480 px. At 1440 px they stay tables with their headers, and none scrolls sideways.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_browser import Watched, serve
from tests.kit.fleet import load_make_fleet

from benchlab.catalog.build import build as build_catalog
from benchlab.layout import Store
from benchlab.publish.build import build_site
from benchlab.publish.data import load_public

pytestmark = pytest.mark.integration

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1440, "height": 900}

SIDEWAYS = """() => Array.from(
    document.querySelectorAll('article .bl-table, article .md-typeset__scrollwrap'))
  .filter(b => b.scrollWidth > b.clientWidth + 1)
  .map(b => (b.querySelector('table') || {}).id || b.className)"""
# A count a phone leaves out on purpose (the fastest table's machine count, on the model
# page) is display: none; every other numeric cell must be drawn inside the viewport.
VALUES_OUT = """(width) => Array.from(document.querySelectorAll('article .bl-table td.bl-num'))
  .filter(td => getComputedStyle(td).display !== 'none')
  .filter(td => { const r = td.getBoundingClientRect();
                  return r.width === 0 || r.right > width + 0.5 || r.left < 0; })
  .map(td => td.getAttribute('data-label') + ' ' + td.textContent)"""
VALUES = "() => document.querySelectorAll('article .bl-table td.bl-num').length"
HEADERS = """(sel) => Array.from(document.querySelectorAll(sel + ' thead th'))
  .filter(th => th.getBoundingClientRect().height > 0).length"""


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    base = tmp_path_factory.mktemp("fleet300")
    store = base / "experiments" / "benchmark"
    load_make_fleet().make_fleet(store, 300, 0)
    build_catalog(Store(store))
    out = build_site(load_public(Store(store)), base / "out")
    with serve(out) as url:
        yield url, _pages(out)


def _pages(out: Path) -> dict[str, str]:
    """One page of each kind that holds the tables under test."""
    home = (out / "index.html").read_text()
    series = re.search(r"series\.html\?s=[^\"&]+", home)
    assert series is not None
    machine = sorted(p.name for p in (out / "machines").glob("*.html"))[0]
    model = sorted(p.name for p in (out / "models").glob("*.html"))[0]
    return {
        "home": "index.html",
        "machine": f"machines/{machine}",
        "model": f"models/{model}",
        "series": series.group(0),
    }


def _open(watched: Watched, url: str, kind: str) -> None:
    watched.open(url)
    if kind == "series":  # its runs table is drawn by the page script
        watched.page.wait_for_selector("#bl-series-runs tbody tr", timeout=20_000)


@pytest.mark.parametrize("kind", ["home", "machine", "model", "series"])
def test_phone_tables_show_their_values_without_a_sideways_scroll(fleet, watched, kind):
    url, pages = fleet
    watched.page.set_viewport_size(PHONE)
    _open(watched, url + pages[kind], kind)
    assert watched.page.evaluate(VALUES) > 0, "no numeric cell on " + pages[kind]
    assert watched.page.evaluate(SIDEWAYS) == []
    assert watched.page.evaluate(VALUES_OUT, PHONE["width"]) == []
    assert watched.page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    if kind == "home":
        for table in ("#fastest", "#machine-list"):
            assert watched.page.locator(f"{table} tbody tr").count() > 0, table
        # A machine's card still names it and links to its page (every spec is there).
        first = watched.page.locator("#machine-list td[data-label='Machine'] a").first
        assert first.get_attribute("href", timeout=5_000).startswith("machines/")
    if kind == "machine":
        assert watched.page.locator("td[data-label='Decode tok/s']").count() > 0


@pytest.mark.parametrize("kind", ["home", "machine", "series"])
def test_desktop_keeps_the_tables(fleet, watched, kind):
    url, pages = fleet
    watched.page.set_viewport_size(DESKTOP)
    _open(watched, url + pages[kind], kind)
    assert watched.page.evaluate(SIDEWAYS) == []
    table = {"home": "#machine-list", "machine": "article table", "series": "#bl-series-runs"}
    assert watched.page.evaluate(HEADERS, table[kind]) > 3
