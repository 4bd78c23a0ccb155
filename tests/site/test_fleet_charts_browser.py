"""Model and machine page charts on a fleet that misleads naive charts, in a real
headless Chromium: one machine ("big") has 48 series, all faster than every other machine's,
so a chart that picks the top 16 series before it aggregates shows big alone; one machine
("mcu") is three decades slower than big and ran one model at one precision only.

One test per promise: every machine on the by-machine chart (and in the machine dropdown); a
filter that matches nothing says so, and a filter acts on all of the data; a log axis has
labelled 1-2-5 ticks and carries no bar; two series of one colour differ in dash or marker;
no sideways scroll at 1440 and 390 px; search finds a series by its label.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from site_factory import FLEET_MACHINES, entry, fleet_runs, write_entries
from test_browser import Watched, serve

from benchlab.models import CatalogEntry
from benchlab.publish.build import build_site
from benchlab.publish.data import load_public

pytestmark = pytest.mark.integration

MODEL_PAGE = "models/llama-3.2-1b.html"
THROUGHPUT = "chart-model-llama-3.2-1b-throughput"


def extra_runs() -> list[CatalogEntry]:
    """big: Llama-3.2-1B q4 at 1 to 48 threads, every series faster than any other
    machine's; mcu: the same model at q4 and one thread, about 0.1 % of big's speed."""
    out = []
    for threads in range(1, 49):
        for day in range(0, 60, 6):
            run = entry("big", "Llama-3.2-1B", "q4", day, 100.0 + threads, threads=threads)
            run_id = run.run_id.replace("0000abcd", f"0000t{threads:03d}")
            out.append(run.model_copy(update={"run_id": run_id}))
    for day in range(0, 60, 6):
        out.append(entry("mcu", "Llama-3.2-1B", "q4", day, 0.05, threads=1))
    return out


LLAMA_MACHINES = sorted([*FLEET_MACHINES, "big", "mcu"])


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("wide") / "experiments" / "benchmark"
    store = write_entries(root, [*fleet_runs(), *extra_runs()])
    return build_site(load_public(store), root.parent.parent / "out")


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    with serve(site) as url:
        yield url


def _drawn_x(watched: Watched, chart: str) -> list[str]:
    """The category ticks plotly drew on a chart's x axis."""
    return watched.page.evaluate(
        f"Array.from(document.querySelectorAll('[id=\"{chart}\"] .xtick text'))"
        ".map(t => t.textContent)"
    )


def test_every_machine_is_on_the_by_machine_chart_and_in_the_dropdown(served, watched):
    watched.open(served + MODEL_PAGE)
    assert sorted(_drawn_x(watched, THROUGHPUT)) == LLAMA_MACHINES
    bars = watched.page.evaluate(
        f"document.getElementById('{THROUGHPUT}')._fullData"
        ".filter(t => t.visible === true).map(t => t.x.length)"
    )
    assert bars == [len(LLAMA_MACHINES)]  # one mark per machine: its best configuration
    options = watched.page.locator("select[data-dim=machine] option").all_inner_texts()
    assert options == ["All", *LLAMA_MACHINES]
    # The hover names the settings behind each machine's mark.
    watched.page.evaluate(f"Plotly.Fx.hover('{THROUGHPUT}', [{{curveNumber: 0, pointNumber: 0}}])")
    hover = watched.page.evaluate(
        f"document.querySelector('[id=\"{THROUGHPUT}\"] .hoverlayer').textContent"
    )
    assert "best configuration" in hover and "threads" in hover and "mean of" in hover


def test_a_filter_that_matches_nothing_says_so_and_filters_act_on_all_the_data(served, watched):
    watched.open(served + MODEL_PAGE)
    message = ".bl-nomatch:visible"
    assert watched.page.locator(message).count() == 0
    # mcu ran q4 only: at q8 nothing matches, and every chart says so.
    watched.page.select_option("select[data-dim=machine]", "mcu")
    watched.page.select_option("select[data-dim=precision]", "q8")
    charts = watched.page.locator(".bl-chart").count()
    watched.page.wait_for_function(
        f"document.querySelectorAll('{message.split(':')[0]}:not([hidden])').length === {charts}",
        timeout=5_000,
    )
    assert "No runs match this filter" in watched.page.locator(message).first.inner_text()
    # pi5's series are none of the top 16 on this page, yet a pi5 filter draws them.
    watched.page.select_option("select[data-dim=precision]", "")
    watched.page.select_option("select[data-dim=machine]", "pi5")
    # The charts that carry every series match; the trend carries its top 16 and says so.
    watched.page.wait_for_function(
        "document.querySelectorAll('.bl-nomatch:not([hidden])').length <= 1", timeout=5_000
    )
    trend = watched.page.locator(".bl-nomatch:visible")
    assert trend.count() == 0 or "top 16 of" in trend.first.inner_text()
    scaling = watched.page.evaluate(
        "document.getElementById('chart-model-llama-3.2-1b-scaling').data"
        ".filter(t => t.visible === true).map(t => t.customdata[0][0])"
    )
    assert scaling and set(scaling) == {"pi5"}
    assert _drawn_x(watched, THROUGHPUT) == ["pi5"]


AXES_JS = """
(id) => {
  const div = document.getElementById(id);
  const full = div._fullLayout;
  return Object.keys(full).filter(k => /^[xy]axis\\d*$/.test(k)).map(k => ({
    name: k, type: full[k].type,
    ticks: Array.from(div.querySelectorAll('.' + k[0] + (k.slice(5) || '') + 'tick text'))
      .map(t => t.textContent),
    bars: div._fullData.filter(t => t.type === 'bar' && t.visible === true
      && (t[k[0] + 'axis'] || k[0]) === k[0] + k.slice(5)).length,
  }));
}
"""

ONE_TWO_FIVE = {f"{m}{s}" for m in (1, 2, 5, 10, 20, 50, 100, 200, 500) for s in ("", "k", "M")}
ONE_TWO_FIVE |= {"0.001", "0.002", "0.005", "0.01", "0.02", "0.05", "0.1", "0.2", "0.5"}


@pytest.mark.parametrize("page", [MODEL_PAGE, "machines/laptop.html", "machines/big.html"])
def test_log_axes_have_labelled_one_two_five_ticks_and_carry_no_bars(served, watched, page):
    watched.open(served + page)
    ids = watched.page.evaluate("Array.from(document.querySelectorAll('.bl-chart')).map(d => d.id)")
    logs = 0
    for chart in ids:
        for axis in watched.page.evaluate(AXES_JS, chart):
            if axis["type"] != "log":
                continue
            logs += 1
            assert axis["bars"] == 0, (chart, axis)
            assert axis["ticks"] and set(axis["ticks"]) <= ONE_TWO_FIVE, (chart, axis)
            assert len(axis["ticks"]) >= 3, (chart, axis)
    if page == MODEL_PAGE:
        # big and mcu are three decades apart: the by-machine chart needs its log axis.
        assert logs >= 1
        kinds = watched.page.evaluate(
            f"document.getElementById('{THROUGHPUT}')._fullData"
            ".filter(t => t.visible === true).map(t => t.type + ':' + t.mode)"
        )
        assert kinds == ["scatter:markers+text"]  # dots, not bars, on a log axis


STYLES_JS = """
(id) => document.getElementById(id)._fullData
  .filter(t => t.visible !== false && t.type === 'scatter' && t.mode && t.mode.includes('lines'))
  .map(t => [t.name, t.line.color, t.line.dash, t.marker.symbol])
"""


@pytest.mark.parametrize("page", [MODEL_PAGE, "machines/laptop.html", "machines/big.html"])
def test_two_series_that_share_a_colour_differ_in_dash_or_marker(served, watched, page):
    watched.open(served + page)
    ids = watched.page.evaluate("Array.from(document.querySelectorAll('.bl-chart')).map(d => d.id)")
    shared = 0
    for chart in ids:
        lines = watched.page.evaluate(STYLES_JS, chart)
        by_color: dict[str, list[tuple[str, str]]] = {}
        for name, color, dash, symbol in lines:
            by_color.setdefault(color, []).append((dash, symbol))
            assert "t1" not in name.split() and "t2" not in name.split(), name
        for color, styles in by_color.items():
            assert len(set(styles)) == len(styles), (chart, color, styles)
            shared += len(styles) > 1
    assert shared >= 1  # the fleet does make series share a colour


def test_one_machine_draws_its_best_forty_series_of_those_that_match(served, watched):
    watched.open(served + "machines/big.html")
    chart = "document.getElementById('chart-machine-big-throughput')"
    drawn = watched.page.evaluate(f"{chart}.data.filter(t => t.visible === true)[0].y")
    carried = watched.page.evaluate(f"{chart}.blOriginal.find(t => t.visible === true).y.length")
    assert carried == 48 and len(drawn) == 40
    assert drawn[-1].endswith("48 threads")  # the best on top


@pytest.mark.parametrize("width", [1440, 390])
@pytest.mark.parametrize("page", [MODEL_PAGE, "machines/laptop.html", "machines/big.html"])
def test_no_sideways_scroll(served, watched, page, width):
    watched.page.set_viewport_size({"width": width, "height": 900})
    watched.open(served + page)
    assert watched.page.evaluate("document.documentElement.scrollWidth") <= width
    widths = watched.page.evaluate(
        "Array.from(document.querySelectorAll('.bl-chart svg.main-svg'))"
        ".map(s => s.getBoundingClientRect().right)"
    )
    assert widths and max(widths) <= width


def _search(watched: Watched, query: str, href: str) -> str:
    """Type `query` into the site's search (MkDocs Material reacts to key strokes) and
    return the text of the first result whose link holds `href`."""
    box = watched.page.locator("input.md-search__input")
    box.fill("")
    box.type(query, delay=10)
    hit = watched.page.locator(f".md-search-result__item a[href*='{href}']").first
    hit.wait_for(timeout=15_000)
    return hit.inner_text()


def test_search_finds_series_machines_and_models_by_id_and_label(served, watched):
    watched.open(served + "index.html")
    watched.page.locator("label.md-search__icon, .md-search__input").first.click()
    assert "mcu Llama-3.2-1B q4" in _search(watched, "mcu", "series.html?s=")
    label = "big Llama-3.2-1B q4 reference t17"
    text = _search(watched, label, "series.html?s=")
    assert label in text and "17 threads" in text  # the label, and what it means
    sid = text.split("Series ")[1].split(":")[0]
    assert label in _search(watched, sid, f"series.html?s={sid}")
    assert "jetson" in _search(watched, "jetson", "machines/jetson.html")
    assert "llama-3.2-1b" in _search(watched, "llama-3.2-1b", "models/llama-3.2-1b.html")


def test_charts_draw_every_point_with_its_full_customdata_from_compact_files(served, watched, site):
    """The chart files write the customdata fields a trace's points share once (blcd);
    the page draws each point with all of them, as the figure built them."""
    import json

    from benchlab.publish.charts.output import COMPACT_KEY, expand_trace

    watched.open(served + MODEL_PAGE)
    slugs = watched.page.evaluate(
        "Array.from(document.querySelectorAll('.bl-chart')).map(d => d.dataset.chart)"
    )
    compacted = 0
    for slug in slugs:
        text = (site / "bl" / "charts" / f"{slug}.js").read_text()
        written = json.loads(text[text.index("]=") + 2 :].rstrip().rstrip(";"))["data"]
        compacted += sum(COMPACT_KEY in t for t in written)
        drawn = watched.page.evaluate(
            f"document.querySelector('[data-chart=\"{slug}\"]').blOriginal"
            ".map(t => [t.customdata || null, t.blcd === undefined])"
        )
        # A trend's later metric draws the points of the line it names (`meta.like`).
        like = [written[(t.get("meta") or {}).get("like", i)] for i, t in enumerate(written)]
        assert [d[0] for d in drawn] == [expand_trace(t).get("customdata") for t in like]
        assert all(d[1] for d in drawn), slug
    assert compacted >= 5
    trend = "chart-model-llama-3.2-1b-trend"
    curve = watched.page.evaluate(
        f"document.getElementById('{trend}')._fullData"
        ".findIndex(t => t.visible === true && (t.customdata || []).length > 1)"
    )
    assert curve >= 0
    watched.page.evaluate(f"Plotly.Fx.hover('{trend}', [{{curveNumber: {curve}, pointNumber: 1}}])")
    hover = watched.page.evaluate(
        f"document.querySelector('[id=\"{trend}\"] .hoverlayer').textContent"
    )
    point = watched.page.evaluate(f"document.getElementById('{trend}').data[{curve}].customdata[1]")
    assert point[0] in hover and point[2] in hover and f"run {point[3]}" in hover
