"""Fixtures of the site tests: a small public store built from the models."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # pytest runs in importlib mode

from site_factory import thread_runs, write_fleet, write_store
from test_browser import Watched

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
def browser():
    """Headless Chromium, loopback only (every other host resolves to nothing)."""
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


@pytest.fixture
def watched(browser) -> Iterator[Watched]:
    """A page for one test; it passes only with no console error and no off-loopback load."""
    page = Watched(browser)
    try:
        yield page
        assert not page.errors and not page.outside
    finally:
        page.close()


@pytest.fixture
def public_store(store: Path):
    write_store(store)
    return store


@pytest.fixture
def threads_store(store: Path):
    """The public store plus a t1 twin of gpu-box's SmolLM2-135M q8 series (t4)."""
    write_store(store, thread_runs())
    return store


@pytest.fixture
def fleet_store(store: Path):
    """The generated fleet with pi5's planted -28 % step on its q4 runs."""
    write_fleet(store)
    return store
