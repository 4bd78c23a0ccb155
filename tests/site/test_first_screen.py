"""The first screen, in a real headless Chromium: the answer before anything else.

On the quick start's demo (a catalog whose only machine is `local`) and on a generated
3,000-run fleet (tools/perf/make_fleet.py, then `bench catalog build`): at 1440x900 the
demo's results, or the fastest-machines table, start in the upper two thirds of the screen
(above 600 px), under a status that is one line when nothing regressed; on a 390x844
phone, Compare's and Regressions' controls start within the first screen. At 1440 px no
home table hides a column behind a sideways scroll. And the charts of a first demo are
sane: a single-run series' time axis is ticked in hours, not fractions of a second, and a
one-size batch curve gets a linear axis (tools/perf/first_screen.py prints the figures).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from site_factory import demo_runs, entry, write_entries
from test_browser import Watched, serve
from tests.kit.fleet import load_make_fleet

from benchlab.catalog.build import build as build_catalog
from benchlab.layout import Store
from benchlab.models import BatchCurvePoint
from benchlab.publish.build import build_site
from benchlab.publish.data import load_public

pytestmark = pytest.mark.integration

DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}
ANSWER_ABOVE = 600

TOP = "(sel) => { const e = document.querySelector(sel); " \
      "return e ? e.getBoundingClientRect().top + window.scrollY : null; }"  # fmt: skip
FIRST_CONTROL = """() => {
  for (const c of document.querySelectorAll(
      'article select, article input, article table[data-bl-sort] th')) {
    const box = c.getBoundingClientRect();
    if (box.width > 0 && box.height > 0) return box.top + window.scrollY;
  }
  return null;
}"""
SIDEWAYS = """() => Array.from(
    document.querySelectorAll('article .bl-table, article .md-typeset__scrollwrap'))
  .filter(b => b.scrollWidth > b.clientWidth + 1)
  .map(b => (b.querySelector('table') || {}).id || b.className)"""


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    base = tmp_path_factory.mktemp("demo")
    store = write_entries(base / "experiments" / "benchmark", demo_runs())
    with serve(build_site(load_public(store), base / "out")) as url:
        yield url


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    base = tmp_path_factory.mktemp("fleet3000")
    store = base / "experiments" / "benchmark"
    load_make_fleet().make_fleet(store, 3000, 0)
    build_catalog(Store(store))
    with serve(build_site(load_public(Store(store)), base / "out")) as url:
        yield url


def test_a_first_demo_opens_on_its_results_and_says_how_to_publish(demo, watched):
    watched.page.set_viewport_size(DESKTOP)
    watched.open(demo + "index.html")
    top = watched.page.evaluate(TOP, "#demo-results")
    assert top is not None and top < ANSWER_ABOVE, top
    assert watched.page.locator("#demo-results tbody tr").count() == 8
    note = watched.page.inner_text("#demo-note")
    assert "local" in note and "bench onboard" in note and "publish" in note
    assert note.count(". ") == 0  # one sentence
    # Nothing regressed: one line, no gates the user never set, no green box.
    status = watched.page.locator(".bl-open-summary")
    box = status.bounding_box()
    assert box is not None and box["height"] < 40, box
    assert "Gates" not in status.inner_text()
    assert (
        watched.page.locator(".bl-callout--ok, table#open-suspects, table#what-changed").count()
        == 0
    )
    assert watched.page.evaluate(SIDEWAYS) == []


def test_a_single_run_series_is_ticked_in_hours(demo, watched):
    watched.page.set_viewport_size(DESKTOP)
    watched.open(demo + "index.html")
    href = watched.page.locator("a[href*='series.html?s=']").first.get_attribute("href")
    watched.open(demo + href)
    watched.page.wait_for_selector(".bl-chart svg.main-svg", timeout=20_000)
    ticks = watched.page.evaluate(
        "Array.from(document.querySelectorAll('.bl-chart .xtick text')).map(t => t.textContent)"
    )
    assert ticks, "no x ticks drawn"
    assert not [t for t in ticks if re.search(r"[0-9]:[0-9]{2}[.][0-9]", t)], ticks


def test_a_one_size_batch_curve_gets_a_linear_axis(tmp_path, browser):
    run = entry("pi5", "SmolLM2-135M", "q8", 0, 5.0,
                batch_curve=[BatchCurvePoint(batch=1, agg_tok_per_sec=5.0)])  # fmt: skip
    store = write_entries(tmp_path / "experiments" / "benchmark", [run])
    with serve(build_site(load_public(store), tmp_path / "out")) as url:
        page = Watched(browser)
        try:
            page.open(url + "index.html")
            page.page.locator("a[href*='run.html?s=']").first.click()
            page.page.wait_for_selector(".bl-chart--run svg.main-svg", timeout=20_000)
            axis = page.page.evaluate(
                "(() => { const a = document.querySelector('.bl-chart--run')._fullLayout.xaxis;"
                " return [a.type, a.range]; })()"
            )
            assert axis[0] == "linear" and axis[1][0] >= 0 and axis[1][1] <= 4, axis
            assert not page.errors and not page.outside
        finally:
            page.close()


@pytest.mark.slow
def test_a_3000_run_fleet_opens_on_the_fastest_machines(fleet, watched):
    watched.page.set_viewport_size(DESKTOP)
    watched.open(fleet + "index.html")
    top = watched.page.evaluate(TOP, "#fastest")
    assert top is not None and top < ANSWER_ABOVE, top
    assert watched.page.evaluate(SIDEWAYS) == []
    status = watched.page.locator(".bl-open-summary").bounding_box()
    assert status is not None and status["height"] < 40, status


@pytest.mark.slow
@pytest.mark.parametrize("page", ["compare.html", "regressions.html"])
def test_phone_controls_come_before_the_prose(fleet, watched, page):
    watched.page.set_viewport_size(PHONE)
    watched.open(fleet + page)
    top = watched.page.evaluate(FIRST_CONTROL)
    if page == "compare.html":
        assert top is not None
    assert top is None or top < PHONE["height"], top
