"""The home page leads with every regression still in effect, on a generated fleet
(`home_scenario`): an old open step on the first screen, a fixed one not listed as open,
suspects counted apart, a memory figure going up counted as a regression, marked outliers
left out of detection and drawn hollow, a run stamped in 2099 that does not move the window
(and is named on the health page), the gate line, and step tables that fit 1440 px and
390 px in a real headless Chromium without any sideways scroll."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest
from home_scenario import OLD_STEP_DAY, scenario_runs
from page_tables import table_rows
from site_factory import START, write_entries
from test_browser import Watched, serve

from benchlab.detect.steps import Step
from benchlab.publish.build import build_site, expand
from benchlab.publish.data import load_public
from benchlab.publish.detection import (
    future_runs,
    judged_metrics,
    open_by_level,
    open_regressions,
    still_in_effect,
    window,
)
from benchlab.publish.site import render_pages
from benchlab.publish.sparkline import MAX_POINTS, sparkline


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("home") / "experiments" / "benchmark"
    return render_pages(load_public(write_entries(root, scenario_runs()))).files


def test_an_old_open_regression_leads_the_home_page(rendered):
    text = expand(rendered, "index.md")
    rows = table_rows(text, "open-regressions")
    old = [row for row in rows if row[1].startswith("oldbox")]
    assert old, rows
    assert -31 < float(old[0][2].split()[0]) < -25  # the planted -28 %
    stamp = START.replace(minute=14) + timedelta(days=OLD_STEP_DAY)  # entry() adds 14 min
    assert old[0][3] == stamp.strftime("%Y-%m-%d %H:%M:%S")
    # Right after the fastest table, before "what changed in the last 14 days", which does
    # not hold it.
    assert text.index('id="fastest"') < text.index('id="open-regressions"')
    assert text.index('id="open-regressions"') < text.index('id="what-changed-heading"')
    assert not any(row[2].startswith("oldbox") for row in table_rows(text, "what-changed"))
    assert '<svg class="bl-spark"' in text


def test_a_fixed_regression_is_not_listed_as_open_but_stays_in_the_history(rendered):
    text = expand(rendered, "index.md")
    listed = table_rows(text, "open-regressions") + table_rows(text, "open-suspects")
    assert not any(row[1].startswith("fixbox") for row in listed)
    steps = table_rows(expand(rendered, "regressions.md"), "all-steps")
    fixbox = [row for row in steps if row[2].startswith("fixbox")]
    by_metric: dict[str, list[str]] = {}
    for row in fixbox:  # each metric the series carries is its own history
        by_metric.setdefault(row[1].split(" % ", 1)[1], []).append(row[0])
    assert by_metric and "peak aggregate" in by_metric
    assert all(sorted(kinds) == ["improvement", "regression"] for kinds in by_metric.values())


def test_suspects_are_counted_and_listed_apart(rendered):
    text = expand(rendered, "index.md")
    confirmed, suspects = table_rows(text, "open-regressions"), table_rows(text, "open-suspects")
    assert [row[1].split()[0] for row in suspects] == ["tailbox"]
    assert not any(row[1].startswith("tailbox") for row in confirmed)
    summary = re.sub(r"<[^>]+>", "", text.split('class="bl-summary bl-open-summary">', 1)[1])
    assert summary.startswith(f"{len(confirmed)} regression(s) still in effect")
    assert "1 suspect(s), counted apart" in summary.split("\n", 1)[0]
    assert "<h2" in text.split('id="open-regressions"', 1)[1].split('id="open-suspects"', 1)[0]


def test_a_memory_figure_going_up_is_an_open_regression(rendered):
    rows = table_rows(expand(rendered, "index.md"), "open-regressions")
    [mem] = [row for row in rows if row[1].startswith("membox")]
    assert mem[2].startswith("+30") and "peak resident memory" in mem[2] and "MiB" in mem[2]


def test_marked_outliers_detect_nothing_and_are_drawn_hollow(rendered):
    text = expand(rendered, "index.md")
    listed = table_rows(text, "open-regressions") + table_rows(text, "open-suspects")
    assert not any(row[1].startswith("markbox") for row in listed)  # its newest run is marked
    old = re.search(r'<tr><td data-label="Trend"[^>]*>(<svg.*?</svg>)</td><td[^>]*>'
                    r'<a[^>]*>oldbox', text)  # fmt: skip
    assert old and old.group(1).count("bl-spark__outlier") == 1


def test_a_run_stamped_in_the_future_does_not_move_the_window(rendered, tmp_path):
    text = expand(rendered, "index.md")
    assert "(2025-03-21 12:14:00 to 2025-04-04 12:14:00 UTC)" in text  # day 88 and 14 before
    assert "2099" not in text.split("## Machines")[0]
    assert {row[2].split()[0] for row in table_rows(text, "what-changed")} == {"tailbox"}
    health = expand(rendered, "health.md")
    assert "1 run(s) stamped in the future" in health and "clockbox" in health
    assert "2099-01-01" in health.replace("\\", "")  # Markdown-escaped
    # Without the wrong clock the page's window is the same.
    root = tmp_path / "experiments" / "benchmark"
    honest = render_pages(load_public(write_entries(root, scenario_runs(future=False)))).files
    assert "(2025-03-21 12:14:00 to 2025-04-04 12:14:00 UTC)" in honest["index.md"]
    assert "stamped in the future" not in honest["health.md"]


def test_window_sets_aside_stamps_after_the_build_time():
    histories = [
        [{"timestamp": "2025-04-01T00:00:00Z", "run_id": "a"},
         {"timestamp": "2099-01-01T00:00:00Z", "run_id": "b"}],
        [{"timestamp": "2025-04-03T00:00:00Z", "run_id": "c"}],
    ]  # fmt: skip
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    assert window(histories, 14, now) == ("2025-03-20T00:00:00Z", "2025-04-03T00:00:00Z")
    assert [r["timestamp"] for r in future_runs(histories, now)] == ["2099-01-01T00:00:00Z"]
    # A build in 2100 trusts the 2099 stamp: only stamps no clock could have written yet go.
    later = datetime(2100, 1, 1, tzinfo=timezone.utc)
    assert window(histories, 1, later) == ("2098-12-31T00:00:00Z", "2099-01-01T00:00:00Z")
    assert window([], 14, now) == (None, None)


def _step(before: float, after: float, day: int, metric: str = "peak_tok_per_sec") -> Step:
    from benchlab.detect.steps import step_kind

    change = (after - before) / before
    stamp = f"2025-01-{day:02d}T00:00:00Z"
    return Step("s1", "x", metric, f"r{day}", stamp, f"r{day - 1}", before, after, change,
                0.99, step_kind(metric, change))  # fmt: skip


def test_open_by_level_reads_the_level_after_the_later_steps():
    drop, fix = _step(100, 80, 3), _step(80, 99, 9)
    assert open_by_level(drop, []) and not open_by_level(drop, [fix])
    assert open_by_level(drop, [_step(80, 60, 9)])  # two regressions in a row
    assert not open_by_level(drop, [_step(80, 95, 9)])  # back more than half way: undone
    latency = _step(10, 14, 3, "ttft_ms")  # lower is better: going up is the regression
    assert latency.kind == "regression" and open_by_level(latency, [])
    assert not open_by_level(latency, [_step(14, 10.5, 9, "ttft_ms")])


def test_open_regressions_take_the_detectors_verdict_largest_first():
    drop, second = _step(100, 80, 3), _step(80, 60, 9)
    if hasattr(drop, "open"):  # the detector says which steps are still in effect
        assert open_regressions([drop, second]) == []  # open=False on both
        drop, second = replace(drop, open=True), replace(second, open=True)
    assert open_regressions([drop, second]) == [second, drop]  # -25 % before -20 %
    assert not still_in_effect(_step(80, 99, 9), [])  # an improvement is never open


def test_gate_line_is_hidden_without_verdicts_and_counts_them_with(rendered, tmp_path):
    assert "bl-gate" not in rendered["index.md"]
    runs = scenario_runs(future=False)
    newest: dict[str, int] = {}
    for i, run in enumerate(runs):
        newest[run.machine_id] = i  # each machine's one series, oldest first
    given = ["passed", "failed", "passed", "unknown", "passed"]  # the sixth machine has none
    verdicts = dict(zip(sorted(newest)[:5], given, strict=True))
    for machine, i in newest.items():
        if machine in verdicts:
            runs[i] = runs[i].model_copy(update={"gate": verdicts[machine]})
    root = tmp_path / "experiments" / "benchmark"
    text = render_pages(load_public(write_entries(root, runs))).files["index.md"]
    line = re.sub(r"<[^>]+>", "", text.split("Gates of the", 1)[1].split("</p>", 1)[0])
    assert line.startswith(" 6 series' newest runs: 3 passed, 1 failed, 2 unknown.")


# --- in a real headless Chromium --------------------------------------------------------------


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    base = tmp_path_factory.mktemp("home-site")
    store = write_entries(base / "experiments" / "benchmark", scenario_runs())
    site = build_site(load_public(store), base / "out")
    with serve(site) as url:
        yield url


SIZES = [(1440, 900), (390, 844)]


@pytest.mark.integration
@pytest.mark.parametrize(("width", "height"), SIZES)
def test_the_old_open_regression_is_on_the_first_screen(served, browser, width, height):
    watched = Watched(browser)
    try:
        watched.page.set_viewport_size({"width": width, "height": height})
        watched.open(served + "index.html")
        row = watched.page.locator("#open-regressions tbody tr", has_text="oldbox")
        # Under the fastest table (the answer first): at 1440x900 the old step's whole row is
        # on the first screen; on a phone, where each row is a card, the first card starts
        # there (the old step is the second, under a larger memory step).
        first = watched.page.locator("#open-regressions tbody tr").first
        box = (row if width > 600 else first).bounding_box()
        assert box is not None and box["y"] >= 0
        assert box["y"] + (box["height"] if width > 600 else 120) <= height, box
        assert row.locator("svg.bl-spark").is_visible()
        assert row.locator("svg .bl-spark__outlier").count() == 1  # the marked run, hollow
        assert watched.page.locator("#open-regressions", has_text="fixbox").count() == 0
        assert watched.page.locator("#open-suspects tbody tr").all_inner_texts()[0].count(
            "tailbox") == 1  # fmt: skip
        assert watched.page.locator("#open-regressions", has_text="tailbox").count() == 0
        row.locator("a[href*='run.html']").click()  # the first bad run, one click away
        watched.page.wait_for_selector("#bl-run table", timeout=10_000)
        assert "oldbox" in watched.page.inner_text("article h1")
        assert not watched.errors and not watched.outside
    finally:
        watched.close()


FITS = """() => {
  const width = document.documentElement.clientWidth;
  const out = {page: document.documentElement.scrollWidth, width, clipped: []};
  for (const table of document.querySelectorAll(
      'table#open-regressions, table#open-suspects, table#what-changed, table#all-steps')) {
    const box = table.closest('.bl-table');
    if (box.scrollWidth > box.clientWidth + 1) out.clipped.push(table.id + ' scrolls');
    for (const cell of table.querySelectorAll('td')) {
      const r = cell.getBoundingClientRect();
      const label = cell.dataset.label;
      if ((label === 'Confidence' || label === 'Runs after') && r.width > 0
          && (r.right > width + 1 || r.left < -1))
        out.clipped.push(table.id + ' ' + label);
    }
  }
  return out;
}"""


@pytest.mark.integration
@pytest.mark.parametrize(("width", "height"), SIZES)
@pytest.mark.parametrize("page", ["index.html", "regressions.html"])
def test_step_tables_fit_without_sideways_scroll(served, browser, page, width, height):
    watched = Watched(browser)
    try:
        watched.page.set_viewport_size({"width": width, "height": height})
        watched.open(served + page)
        fits = watched.page.evaluate(FITS)
        assert fits["page"] <= width, fits
        assert fits["clipped"] == [], fits
        assert watched.page.locator("td[data-label='Runs after']").first.is_visible()
        assert not watched.errors and not watched.outside
    finally:
        watched.close()


def test_judged_metrics_leave_out_derived_and_lockstep_metrics():
    runs = [
        {"peak_tok_per_sec": 10.0 + i, "decode_tok_per_sec": 5.0 + i % 3,
         "decode_ms_per_token": 1000 / (5.0 + i % 3), "baseline_tok_per_sec": 5.0 + i % 3,
         "prefill_tok_per_sec": 50.0 + i, "peak_rss_mb": 900.0 + i % 2}
        for i in range(6)
    ]  # fmt: skip
    # decode_ms_per_token derives from decode; batch-1 equals decode run by run.
    assert judged_metrics(runs) == [
        "peak_tok_per_sec", "decode_tok_per_sec", "prefill_tok_per_sec", "peak_rss_mb"
    ]  # fmt: skip
    only_latency = [{"decode_ms_per_token": 20.0 + i} for i in range(6)]  # an import
    assert judged_metrics(only_latency) == ["decode_ms_per_token"]


def test_sparkline_keeps_the_first_bad_run_of_a_long_history():
    runs = [{"run_id": f"r{i:04d}", "peak_tok_per_sec": 100.0 - 30 * (i >= 40), "tags": []}
            for i in range(1_000)]  # fmt: skip
    svg = str(sparkline(runs, "peak_tok_per_sec", "r0040", "t"))
    assert svg.count("bl-spark__bad") == 1  # the step's run survived the thinning
    assert len(re.search(r'points="([^"]*)"', svg).group(1).split()) <= MAX_POINTS + 2
    assert sparkline(runs[:1], "peak_tok_per_sec", "r0000", "t") == ""  # one run: no line
