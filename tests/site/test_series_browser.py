"""The one series page in a real headless Chromium (Debian's), served on loopback only:
`series.html?s=<id>` draws a series from its data file; its noise band follows the series'
own spread (a noisy series gets a wider band than a quiet one); a run marked with `bench
mark-outlier` is drawn as a marked point, with its reason in the hover, and is not the
current level; the newest run's gate verdict shows; a deep link works from a table and
from file://; no console error, no request leaving 127.0.0.1. The run page shows the gate
verdict and the outlier mark with its reason."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from site_factory import entry, write_store
from test_browser import Watched, serve

from benchlab.cli import main
from benchlab.identity import series_of
from benchlab.layout import Store, write_model
from benchlab.machines.compute import declared
from benchlab.models import CpuSpec, HardwareSpec, MachineSpecs, OsSpec
from benchlab.publish.build import build_site
from benchlab.publish.data import load_public

pytestmark = pytest.mark.integration

REASON = "thermal throttling"


def _history() -> list:
    """Two series of one machine and model, 20 daily runs each: `q4` quiet (+-0.5 %), `q8`
    noisy (+-15 %, alternating). The quiet series' day-10 run reads 3x and is marked as an
    outlier; its newest run failed its gate. `q4` states its parameter count (1 B: an MFU
    against pi5's declared 1 TFLOP/s), `q8` its size (4 GB: an MBU, not measured, for pi5
    has no bandwidth figure)."""
    runs = []
    for day in range(20):
        quiet = 100.0 * (1 + 0.005 * (-1) ** day)
        if day == 10:
            quiet = 300.0
        gate = (
            {"gate": "failed", "gate_detail": "peak 99.5 < 105 (baseline run x)"}
            if day == 19
            else {}
        )
        runs.append(
            entry("pi5", "Band-Test", "q4", day, quiet / 8**0.7, model_params=10**9, **gate)
        )
        noisy = 100.0 * (1 + 0.15 * (-1) ** day)
        runs.append(entry("pi5", "Band-Test", "q8", day, noisy / 8**0.7, model_size=4 * 10**9))
    return runs


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], str]:
    """The built site, the series ids by precision, and the marked run's id."""
    root = tmp_path_factory.mktemp("series") / "experiments" / "benchmark"
    extra = _history()
    write_store(root, extra)
    write_model(
        Store(root).public_specs("pi5"),
        MachineSpecs(
            machine_id="pi5",
            registered_at="2025-01-01T00:00:00Z",
            hardware=HardwareSpec(cpu=CpuSpec(model="Cortex-A76"), peak_tflops=declared(1.0)),
            os=OsSpec(name="Linux"),
        ),
    )
    marked = next(r.run_id for r in extra if r.precision == "q4" and r.peak_tok_per_sec > 200)
    assert main(["--store", str(root), "mark-outlier", marked, "--reason", REASON]) == 0
    data = load_public(Store(root))
    sids = {r["precision"]: series_of(r) for r in data.runs if r["model"] == "Band-Test"}
    built = build_site(data, root.parent.parent / "out")
    return built, sids, marked


@pytest.fixture(scope="module")
def served(site) -> Iterator[str]:
    with serve(site[0]) as url:
        yield url


def _open_series(watched: Watched, url: str) -> None:
    watched.open(url)
    watched.page.wait_for_selector("#bl-series[data-drawn]", timeout=20_000)
    watched.page.wait_for_function(
        "Array.from(document.querySelectorAll('#bl-series .bl-chart'))"
        ".every(d => d.querySelector('svg.main-svg'))",
        timeout=20_000,
    )


def _band(watched: Watched, precision: str, sids: dict[str, str]) -> tuple[float, float, float]:
    """(y0, y1, level) of the peak chart's first noise band, as Plotly drew it."""
    shapes = watched.page.evaluate(
        f"document.getElementById('chart-series-{sids[precision]}-peak').layout.shapes"
    )
    band = next(s for s in shapes if s["type"] == "rect")
    level = next(s for s in shapes if s["type"] == "line" and s["yref"] == "y")
    return band["y0"], band["y1"], level["y0"]


def test_series_page_draws_its_data_with_a_band_from_its_own_spread(site, served, browser):
    _, sids, _ = site
    watched = Watched(browser)
    try:
        _open_series(watched, served + f"series.html?s={sids['q4']}")
        assert "Band-Test" in watched.page.inner_text("article h1")
        assert watched.page.locator("#bl-series .bl-chart svg.main-svg").count() >= 2
        quiet = _band(watched, "q4", sids)
        _open_series(watched, served + f"series.html?s={sids['q8']}")
        noisy = _band(watched, "q8", sids)
        mbu = watched.page.inner_text("#bl-series .bl-util[data-util='MBU']")
        assert mbu == ". MBU not measured (no bandwidth figure for the memory it read)", mbu
        assert "MFU" not in watched.page.inner_text("#bl-series .bl-series-facts")
        quiet_width, noisy_width = quiet[1] - quiet[0], noisy[1] - noisy[0]
        assert quiet_width > 0 and noisy_width > 10 * quiet_width, (quiet, noisy)
        # The band holds the series' own level; the 3x outlier moved neither band nor level.
        assert quiet[0] < quiet[2] < quiet[1] and quiet[1] < 1.1 * quiet[2]
        assert not watched.errors and not watched.outside
    finally:
        watched.close()


def test_marked_outlier_is_drawn_marked_and_is_not_the_level(site, served, browser):
    _, sids, marked = site
    watched = Watched(browser)
    try:
        _open_series(watched, served + f"series.html?s={sids['q4']}")
        traces = watched.page.evaluate(
            f"document.getElementById('chart-series-{sids['q4']}-peak').data"
            ".map(t => ({name: t.name, symbol: (t.marker || {}).symbol, ids: "
            "(t.customdata || []).map(c => c[3]), hover: t.hovertemplate || '', "
            "extra: (t.customdata || []).map(c => c[8])}))"
        )
        [outliers] = [t for t in traces if t["name"] == "marked outliers"]
        assert outliers["ids"] == [marked] and outliers["symbol"] == "x-open"
        assert outliers["extra"] == [REASON] and "outlier" in outliers["hover"]
        [runs] = [t for t in traces if t["name"] == "runs"]
        assert marked not in runs["ids"] and len(runs["ids"]) == 19
        level = watched.page.inner_text("#bl-series .bl-level[data-metric='peak_tok_per_sec']")
        value = float(level.split("tok/s")[0].split()[-1].replace(",", ""))
        assert 99 < value < 101, level  # the outlier (300) is not counted
        facts = watched.page.inner_text("#bl-series .bl-series-facts")
        assert "gate failed" in facts and "1 run(s) marked as outliers" in facts
        # MFU at the prefill level against the declared peak; the size-less q4 has no MBU.
        mfu = watched.page.inner_text("#bl-series .bl-util[data-util='MFU']")
        assert re.fullmatch(r"\. MFU \d+\.\d% of 1\.0 TFLOP/s \(declared [-\d]+\)", mfu), mfu
        assert "MBU" not in facts and "impossible" not in facts
        gate = watched.page.locator("#bl-series .bl-series-facts .bl-badge--gate-failed")
        assert "peak 99.5 < 105" in (gate.get_attribute("title") or "")
        assert not watched.errors and not watched.outside
    finally:
        watched.close()


def test_deep_link_from_a_table_and_the_run_page_shows_mark_and_verdict(site, served, browser):
    built, sids, marked = site
    watched = Watched(browser)
    try:
        watched.open(served + "machines/pi5.html")
        link = watched.page.locator(f"a[href*='series.html?s={sids['q8']}']").first
        link.click()
        watched.page.wait_for_selector("#bl-series[data-drawn]", timeout=20_000)
        assert watched.page.url.endswith(f"series.html?s={sids['q8']}")
        assert "q8" in watched.page.inner_text("article h1")
        watched.open(served + f"run.html?s={sids['q4']}&r={marked}")
        watched.page.wait_for_selector("#bl-run table", timeout=10_000)
        badge = watched.page.locator("#bl-run .bl-badge--outlier")
        assert badge.is_visible() and REASON in (badge.get_attribute("title") or "")
        assert REASON in watched.page.inner_text("#bl-run")
        newest = json.loads(
            (built / "bl" / "series" / f"{sids['q4']}.js").read_text().split("]=", 1)[1][:-2]
        )["newest"]["run_id"]
        watched.open(served + f"run.html?s={sids['q4']}&r={newest}")
        watched.page.wait_for_selector("#bl-run table", timeout=10_000)
        assert watched.page.locator("#bl-run .bl-badge--gate-failed").is_visible()
        assert not watched.errors and not watched.outside
    finally:
        watched.close()


def test_series_page_from_file_urls_and_a_bad_id(site, browser):
    built, sids, _ = site
    watched = Watched(browser)
    try:
        _open_series(watched, (built / "series.html").as_uri() + f"?s={sids['q8']}")
        watched.open((built / "series.html").as_uri() + "?s=../../etc/passwd")
        assert "Not a series id" in watched.page.inner_text("#bl-series")
        watched.open((built / "series.html").as_uri())
        watched.page.wait_for_selector(".bl-series-list li", timeout=10_000)
        items = watched.page.locator(".bl-series-list li").all_inner_texts()
        assert sum("Band-Test" in t for t in items) == 2
        assert not watched.errors and not watched.outside
    finally:
        watched.close()
