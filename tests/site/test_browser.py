"""The built site in a real headless Chromium (Debian's), served on loopback only.

Every page loads without a console error and without any request leaving 127.0.0.1; each
chart has drawn its SVG; the machine filter changes what a chart shows and lives in the URL;
the XSS-probe model name is text. Two builds from one catalog are byte-identical.

On a generated fleet with a planted step (site_factory.write_fleet), one test per question a
reader brings: what regressed (on the home page's first screen), which machine is fastest
for a model and precision (the first row of a sorted table, one click from home), how
decode scales with threads and batch (a line per thread count). And: no page over 1.5 MB
with what it loads, dark mode from the OS setting, no sideways scrolling at 390 px.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import shutil
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import pytest
from site_factory import FLEET_MACHINES, XSS_MODEL, fleet_runs, write_fleet, write_store

from benchlab.publish.build import build_site, tree_digest
from benchlab.publish.dashboard import build_dashboard
from benchlab.publish.data import load_public

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("site") / "experiments" / "benchmark"
    store = write_store(root)
    return build_site(load_public(store), root.parent.parent / "out")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


class _LoopbackServer(http.server.ThreadingHTTPServer):
    """Chromium drops connections it no longer needs (a superseded fetch, a closed tab):
    that is the client's choice, not a fault of the site, so only other errors are kept,
    and the test that served them fails on them."""

    errors: list[str]

    def handle_error(self, request: object, client_address: object) -> None:
        error = sys.exc_info()[1]
        if not isinstance(error, ConnectionError):
            self.errors.append(repr(error))


@contextlib.contextmanager
def serve(directory: Path) -> Iterator[str]:
    """A built site over HTTP on loopback (the root URL), torn down on exit: every
    browser test serves its site this way."""
    handler = functools.partial(_Quiet, directory=str(directory))
    server = _LoopbackServer(("127.0.0.1", 0), handler)
    server.errors = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
    assert not server.errors, server.errors


@pytest.fixture(scope="module")
def served(built: Path) -> Iterator[str]:
    with serve(built) as url:
        yield url


class Watched:
    """A page whose console errors, failed loads and off-loopback requests are recorded."""

    def __init__(self, browser) -> None:
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.outside: list[str] = []
        self.dialogs: list[str] = []
        self.context.route("**/*", self._route)
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("dialog", self._dialog)

    def _route(self, route) -> None:
        url = urlparse(route.request.url)
        if url.scheme in ("file", "data", "blob", "about") or url.hostname == "127.0.0.1":
            route.continue_()
        else:
            self.outside.append(route.request.url)
            route.abort()

    def _dialog(self, dialog) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def open(self, url: str) -> None:
        self.page.goto(url, wait_until="load", timeout=20_000)
        self.page.wait_for_function(
            "Array.from(document.querySelectorAll('.bl-chart'))"
            ".every(d => d.querySelector('svg.main-svg'))",
            timeout=30_000,
        )

    def close(self) -> None:
        self.context.close()


def _pages(built: Path) -> list[str]:
    return sorted(p.relative_to(built).as_posix() for p in built.rglob("*.html"))


def test_every_page_loads_clean_and_draws_its_charts(built, served, browser):
    watched = Watched(browser)
    try:
        pages = _pages(built)
        assert len(pages) >= 10
        drawn = 0
        for name in pages:
            watched.open(served + name)
            drawn += watched.page.locator(".bl-chart:has(svg.main-svg)").count()
            assert not watched.errors, (name, watched.errors)
            assert not watched.outside, (name, watched.outside)
        assert drawn >= 20
    finally:
        watched.close()


def test_machine_filter_changes_what_a_chart_shows_and_lives_in_the_url(served, browser):
    watched = Watched(browser)
    try:
        watched.open(served + "models/smollm2-135m.html")
        bars = '[id="chart-model-smollm2-135m-throughput"] .point'
        before = watched.page.locator(bars).count()
        watched.page.select_option(".bl-filter select[data-dim=machine]", "pi5")
        watched.page.wait_for_function(
            f"document.querySelectorAll({bars!r}).length < {before}", timeout=5_000
        )
        ticks = watched.page.evaluate(
            "Array.from(document.querySelectorAll("
            "'[id=\"chart-model-smollm2-135m-throughput\"] .xtick text')).map(t => t.textContent)"
        )
        assert ticks == ["pi5"]
        assert watched.page.evaluate("location.hash") == "#machine=pi5"
        # The URL carries the filter: opening it again shows the same selection.
        watched.open(served + "models/smollm2-135m.html#machine=pi5")
        assert watched.page.input_value(".bl-filter select[data-dim=machine]") == "pi5"
        assert watched.page.locator(bars).count() < before
        watched.page.select_option(".bl-filter select[data-dim=machine]", "")
        watched.page.wait_for_function(
            f"document.querySelectorAll({bars!r}).length === {before}", timeout=5_000
        )
        assert not watched.errors
    finally:
        watched.close()


def test_xss_model_name_is_text(served, browser):
    watched = Watched(browser)
    try:
        watched.open(served + "models/xss-probe.html")
        heading = watched.page.evaluate("document.querySelector('article h1').firstChild.data")
        assert heading == XSS_MODEL
        assert watched.page.title().startswith(XSS_MODEL)
        watched.page.evaluate(
            "Plotly.Fx.hover('chart-model-xss-probe-throughput', "
            "[{curveNumber: 0, pointNumber: 0}])"
        )
        hover = "#chart-model-xss-probe-throughput .hoverlayer"
        assert XSS_MODEL in watched.page.evaluate(f"document.querySelector({hover!r}).textContent")
        watched.open(served + "machines/laptop.html")
        options = watched.page.locator("select[data-dim=model] option").all_inner_texts()
        assert XSS_MODEL in options
        assert watched.dialogs == [] and not watched.errors
    finally:
        watched.close()


def test_site_works_from_file_urls(built, browser):
    watched = Watched(browser)
    try:
        watched.open((built / "machines" / "laptop.html").as_uri())
        assert watched.page.locator(".bl-chart:has(svg.main-svg)").count() >= 2
        # The run page reads its data with a script tag, which works from file:// too.
        watched.page.locator("a[href*='run.html?s=']").first.click()
        watched.page.wait_for_selector("#bl-run table", timeout=10_000)
        assert "Peak aggregate tok/s" in watched.page.inner_text("#bl-run")
        assert not watched.outside and not watched.errors
    finally:
        watched.close()


def test_dashboard_page(tmp_path, browser):
    store = write_store(tmp_path / "experiments" / "benchmark")
    target = build_dashboard(load_public(store), tmp_path / "dash" / "index.html")
    watched = Watched(browser)
    try:
        watched.open(target.as_uri())
        assert watched.page.locator(".bl-chart:has(svg.main-svg)").count() == 3
        rows = "#recent tbody tr:visible"
        all_rows = watched.page.locator(rows).count()
        watched.page.fill("input[data-table-filter=recent]", "gpu-box")
        assert 0 < watched.page.locator(rows).count() < all_rows
        assert not watched.outside and not watched.errors and not watched.dialogs
    finally:
        watched.close()


def test_two_builds_are_byte_identical(built, tmp_path):
    store = write_store(tmp_path / "experiments" / "benchmark")
    again = build_site(load_public(store), tmp_path / "again")
    assert tree_digest(again) == tree_digest(built)
    shutil.rmtree(again)


def test_a_build_over_the_last_one_replaces_it_whole(built, tmp_path):
    """The last site is moved aside and removed beside the render: nothing of it survives,
    and nothing is left beside the output."""
    store = write_store(tmp_path / "experiments" / "benchmark")
    out = tmp_path / "over"
    build_site(load_public(store), out)
    (out / "stale.html").write_text("from the build before", encoding="utf-8")
    (out / "bl" / "runs" / "s000000000000.js").write_text("stale", encoding="utf-8")
    build_site(load_public(store), out)
    assert tree_digest(out) == tree_digest(built)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_no_page_references_another_host(built):
    for path in built.rglob("*.html"):
        text = path.read_text(encoding="utf-8")
        for attr in ("src", "href"):
            for value in __import__("re").findall(rf'{attr}="(https?:[^"]*)"', text):
                pytest.fail(f"{path.name} {attr}={value}")


# --- the three questions, on a generated fleet with a planted step ---------------------------


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fleet") / "experiments" / "benchmark"
    return build_site(load_public(write_fleet(root)), root.parent.parent / "out")


@pytest.fixture(scope="module")
def fleet_served(fleet: Path) -> Iterator[str]:
    with serve(fleet) as url:
        yield url


@pytest.mark.parametrize(("width", "height"), [(1400, 900), (390, 844)])
def test_what_regressed_is_on_the_home_pages_first_screen(fleet_served, browser, width, height):
    watched = Watched(browser)
    try:
        watched.page.set_viewport_size({"width": width, "height": height})
        watched.open(fleet_served + "index.html")
        # The home page leads with the regressions still in effect.
        first = watched.page.locator("#open-regressions tbody tr").first
        text = first.inner_text()
        assert "-2" in text and "pi5" in text and " q4 " in text.replace("\n", " ")
        box = first.bounding_box()
        assert box is not None and box["y"] + min(box["height"], 120) <= height, box
        # The series and the first bad run are one click away.
        first.locator("a[href*='run.html']").click()
        watched.page.wait_for_selector("#bl-run table", timeout=10_000)
        assert "pi5" in watched.page.inner_text("article h1")
        assert not watched.errors and not watched.outside
    finally:
        watched.close()


def test_fastest_machine_is_the_first_row_one_click_from_home(fleet_served, browser):
    runs = [r.model_dump(mode="json") for r in fleet_runs()]
    newest: dict[tuple, dict] = {}
    for run in runs:
        if run["model"] == "Llama-3.2-1B" and run["precision"] == "q8":
            key = (run["machine_id"], run["threads"])
            if key not in newest or run["timestamp"] > newest[key]["timestamp"]:
                newest[key] = run
    fastest = max(newest.values(), key=lambda r: r["peak_tok_per_sec"])["machine_id"]
    fastest_decode = max(newest.values(), key=lambda r: r["decode_tok_per_sec"])["machine_id"]
    watched = Watched(browser)
    try:
        watched.open(fleet_served + "index.html")
        row = watched.page.locator("#fastest tbody tr", has_text="Llama-3.2-1B").filter(
            has_text="q8"
        )
        row.locator("a").first.click()  # the one click
        # The page script has made the table sortable (aria-sort set on every heading).
        watched.page.wait_for_selector("#fastest-q8 th[aria-sort]", timeout=10_000)
        assert watched.page.url.endswith("#precision-q8")
        table = watched.page.locator("#fastest-q8")
        assert table.locator("tbody tr").first.locator("td").first.inner_text() == fastest
        assert table.locator("th").nth(1).get_attribute("aria-sort") == "descending"
        # Sorting by decode is one more click on its heading.
        table.locator("th", has_text="Decode tok/s").click()
        watched.page.wait_for_function(
            "document.querySelector('#fastest-q8 th:nth-child(3)')"
            ".getAttribute('aria-sort') === 'descending'",
            timeout=5_000,
        )
        assert table.locator("tbody tr").first.locator("td").first.inner_text() == fastest_decode
        decode = [
            float(t.replace(",", ""))
            for t in table.locator("tbody tr td:nth-child(3)").all_inner_texts()
        ]
        assert decode == sorted(decode, reverse=True) and len(decode) == len(FLEET_MACHINES)
        assert not watched.errors and not watched.outside
    finally:
        watched.close()


def test_scaling_chart_has_a_line_per_thread_count(fleet_served, browser):
    watched = Watched(browser)
    try:
        watched.open(fleet_served + "models/llama-3.2-1b.html")
        chart = "document.getElementById('chart-model-llama-3.2-1b-scaling')"
        threads = watched.page.evaluate(
            f"Array.from(new Set({chart}.data.filter(t => t.visible === true || "
            "t.visible === undefined).map(t => t.customdata[0][9])))"
        )
        assert sorted(threads) == [1, 2, 4]
        lines = watched.page.evaluate(f"{chart}.querySelectorAll('.scatterlayer .trace').length")
        assert lines >= 3
        threads_chart = "document.getElementById('chart-model-llama-3.2-1b-threads')"
        xs = watched.page.evaluate(
            f"{threads_chart}.data.filter(t => t.x.length > 1).map(t => t.x)"
        )
        assert [1, 2, 4] in xs  # decode against thread count on one machine
        assert not watched.errors and not watched.outside
    finally:
        watched.close()


def test_compare_page_picks_two_machines_and_shows_a_speedup(fleet_served, browser):
    watched = Watched(browser)
    try:
        watched.open(fleet_served + "compare.html#by=machine&match=exact&a=pi5&b=gpu-box")
        watched.page.wait_for_selector("#bl-compare table tbody tr", timeout=10_000)
        assert watched.page.input_value("[data-compare=a]") != watched.page.input_value(
            "[data-compare=b]"
        )
        note = watched.page.inner_text("[data-compare=note]")
        assert "A = pi5, B = gpu-box" in note
        heads = watched.page.locator("#bl-compare th").all_inner_texts()
        assert heads[-1].startswith("Speedup") and "Test" in heads and "Threads" in heads
        # gpu-box/pi5 on every throughput (peak / batch 1, a ratio of two, is the same on both)
        rows = watched.page.locator("#bl-compare tbody tr").filter(has_not_text="peak / batch 1")
        speedups = rows.locator("td:last-child").all_inner_texts()
        assert speedups and all(float(s.rstrip("×")) > 5 for s in speedups)
        assert not watched.errors and not watched.outside
    finally:
        watched.close()


def test_dark_mode_follows_the_os_and_no_page_scrolls_sideways_at_390(fleet, fleet_served, browser):
    context = browser.new_context(viewport={"width": 390, "height": 844}, color_scheme="dark")
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        names = ["index.html", "compare.html", "regressions.html", "health.html"]
        names += ["machines/pi5.html", "models/llama-3.2-1b.html", "about.html", "404.html"]
        sid = sorted(p.stem for p in (fleet / "bl" / "series").glob("s*.js"))[0]
        names.append(f"series.html?s={sid}")  # the one series page, drawn from its data
        for name in names:
            page.goto(fleet_served + name, wait_until="load")
            if name.startswith("series.html"):
                page.wait_for_selector("#bl-series[data-drawn]", timeout=15_000)
            page.wait_for_function(
                "Array.from(document.querySelectorAll('.bl-chart'))"
                ".every(d => d.querySelector('svg.main-svg'))",
                timeout=15_000,
            )
            assert page.evaluate("document.body.dataset.mdColorScheme") == "slate", name
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= 390, (name, width)
        assert not errors
    finally:
        context.close()


PAGE_LIMIT = 1_500_000


def page_weight(site: Path, page: Path) -> int:
    """Bytes of a page's HTML plus every local script and stylesheet it loads, the chart data
    scripts included; for the run and compare pages, the largest data file they load."""
    import re

    text = page.read_text(encoding="utf-8")
    total = len(text.encode())
    refs = re.findall(r'<script[^>]+src="([^"#?]+)"', text)
    refs += re.findall(r'<link[^>]+rel="stylesheet"[^>]+href="([^"#?]+)"', text)
    refs += re.findall(r'<link[^>]+href="([^"#?]+)"[^>]+rel="stylesheet"', text)
    for ref in sorted(set(refs)):
        path = site / ref.lstrip("/") if ref.startswith("/") else (page.parent / ref).resolve()
        assert path.is_file(), (page, ref)
        total += path.stat().st_size
    loads = {"run.html": "bl/runs", "compare.html": "bl/compare", "series.html": "bl/series"}
    if page.name in loads and page.parent == site:
        sizes = [p.stat().st_size for p in (site / loads[page.name]).glob("*.js")]
        total += max(sizes, default=0)
    return total


@pytest.mark.parametrize("which", ["built", "fleet"])
def test_no_page_is_over_1_5_mb_with_what_it_loads(which, request):
    site = request.getfixturevalue(which)
    weights = {p.relative_to(site).as_posix(): page_weight(site, p) for p in site.rglob("*.html")}
    heaviest = max(weights, key=weights.get)
    assert weights[heaviest] <= PAGE_LIMIT, (heaviest, weights[heaviest])
    for name in ("index.html", "about.html", "404.html"):  # no chart, no plotly
        assert "plotly" not in (site / name).read_text(), name
        assert weights[name] < 400_000, (name, weights[name])


def test_run_page_shows_not_measured_and_the_unstable_badge(tmp_path, browser):
    from test_measures import NO_COUNTER, _extra

    root = tmp_path / "experiments" / "benchmark"
    built = build_site(load_public(write_store(root, _extra())), tmp_path / "out")
    data = next(p for p in (built / "bl" / "series").glob("s*.js")
                if '"unstable_count":1' in p.read_text())  # fmt: skip
    watched = Watched(browser)
    try:
        watched.open((built / "series.html").as_uri() + f"?s={data.stem}")
        watched.page.wait_for_selector("#bl-series[data-drawn]", timeout=15_000)
        assert watched.page.locator(".bl-badge--unstable").count() >= 1
        watched.page.locator("tr:has(.bl-badge--unstable) a[href*='run.html?s=']").first.click()
        watched.page.wait_for_selector("#bl-run table", timeout=10_000)
        badge = watched.page.locator("#bl-run .bl-badge--unstable")
        assert badge.is_visible() and "10%" in (badge.get_attribute("title") or "")
        text = watched.page.inner_text("#bl-run")
        assert NO_COUNTER in text and "Time to first token" in text
        assert not watched.outside and not watched.errors
    finally:
        watched.close()
