"""The built site in a real headless Chromium (Debian's), served on loopback only.

Every page loads without a console error and without any request leaving 127.0.0.1; each
chart has drawn its SVG; the machine filter changes what a chart shows; the XSS-probe model
name is text. Two builds from one catalog are byte-identical.
"""

from __future__ import annotations

import functools
import http.server
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import pytest
from site_factory import XSS_MODEL, write_store

from benchlab.publish.data import load_public
from benchlab.publish.site import build_dashboard, build_site, tree_digest

pytestmark = pytest.mark.integration

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("site") / "experiments" / "benchmark"
    store = write_store(root)
    return build_site(load_public(store), root.parent.parent / "out")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def served(built: Path) -> Iterator[str]:
    handler = functools.partial(_Quiet, directory=str(built))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).is_file():
        pytest.skip(f"{CHROMIUM} missing: tools/ci-setup.sh installs Debian's chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        # playwright gives every launch a fresh profile dir of its own (no --user-data-dir).
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


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
            timeout=15_000,
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


def test_machine_filter_changes_what_a_chart_shows(served, browser):
    watched = Watched(browser)
    try:
        watched.open(served + "index.html")
        bars = "#chart-home-throughput .point"
        before = watched.page.locator(bars).count()
        watched.page.select_option(".bl-filter select[data-dim=machine]", "pi5")
        watched.page.wait_for_function(
            f"document.querySelectorAll({bars!r}).length < {before}", timeout=5_000
        )
        ticks = watched.page.evaluate(
            "Array.from(document.querySelectorAll('#chart-home-throughput .xtick text'))"
            ".map(t => t.textContent)"
        )
        assert ticks == ["pi5"]
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
        watched.open(served + "index.html")
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


def test_no_page_references_another_host(built):
    for path in built.rglob("*.html"):
        text = path.read_text(encoding="utf-8")
        for attr in ("src", "href"):
            for value in __import__("re").findall(rf'{attr}="(https?:[^"]*)"', text):
                pytest.fail(f"{path.name} {attr}={value}")
