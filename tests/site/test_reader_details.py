"""Small things a reader sees, each held here: a machine silent for five weeks is named on
Fleet health; search finds a series by a build it ran (`b4520`); the About page defines a
regression as the detector finds one; a first demo says what ran and how to publish, with no
gate line for gates that all passed; a time axis over one run spans a day."""

from __future__ import annotations

import json
import re
from pathlib import Path

from site_factory import demo_runs, entry, fleet_runs, write_entries

from benchlab.publish.build import expand
from benchlab.publish.charts.layout import date_axis
from benchlab.publish.data import load_public
from benchlab.publish.hooks import SEARCH_ENTRIES
from benchlab.publish.site import render_pages

REPO = Path(__file__).resolve().parents[2]


def test_a_machine_silent_for_five_weeks_is_named_on_fleet_health(tmp_path):
    # The fleet's newest run is day 58; oldpi's last is day 20, 38 days before it.
    silent = [entry("oldpi", "SmolLM2-135M", "q8", day, 1.0) for day in range(0, 21, 2)]
    store = write_entries(tmp_path / "a" / "experiments" / "benchmark", fleet_runs() + silent)
    health = expand(render_pages(load_public(store)).files, "health.md")
    callout = health.split('id="silent-machines"', 1)[1].split("</p>", 1)[0]
    assert "1 machine(s) silent" in callout and "14 days" in callout
    row = [line for line in health.splitlines() if line.startswith("| [oldpi]")]
    assert row and row[0].rstrip(" |").endswith("38"), row
    healthy = write_entries(tmp_path / "b" / "experiments" / "benchmark", fleet_runs())
    assert "silent-machines" not in render_pages(load_public(healthy)).files["health.md"]


def test_search_finds_a_series_by_a_build_it_ran(tmp_path):
    runs = [
        entry("pi5", "SmolLM2-135M", "q8", day, 5.0, backend="llama.cpp",
              backend_version=f"b{4500 + 10 * day}")
        for day in range(0, 6)
    ]  # fmt: skip
    store = write_entries(tmp_path / "experiments" / "benchmark", runs)
    entries = json.loads(render_pages(load_public(store)).files[SEARCH_ENTRIES])
    [found] = [e for e in entries if "b4520" in e["text"]]
    assert found["location"].startswith("series") and "b4500" in found["text"]


def test_about_defines_a_regression_as_the_detector_finds_one():
    about = (REPO / "site" / "docs" / "about.md").read_text(encoding="utf-8")
    definition = about.split("**regression**", 1)[1].split("\n- ", 1)[0]
    words = " ".join(definition.split())
    assert "Every metric a series carries is its own history" in words
    assert "still in effect" in words and "suspect" in words.lower() and "outlier" in words
    assert "stepped down" not in about  # the definition that predates the detector


def test_a_first_demo_says_what_ran_and_how_to_publish(tmp_path):
    store = write_entries(tmp_path / "experiments" / "benchmark", demo_runs())
    text = expand(render_pages(load_public(store)).files, "index.md")
    note = re.search(r'<p class="bl-demo" id="demo-note">(.*?)</p>', text, re.S)
    assert note and "<code>local</code>" in note.group(1)
    assert "bench onboard --machine-id NAME" in note.group(1)
    assert "8 run(s) of the reference backend" in note.group(1)
    assert text.index('id="demo-note"') < text.index('id="demo-results"')
    assert "Gates of" not in text  # every gate passed: the line would say nothing
    assert 'id="fastest"' not in text  # one machine is not a ranking


def test_a_time_axis_over_one_run_spans_a_day():
    axis: dict = {}
    date_axis(axis, ["2025-01-06T04:34:29Z"])
    assert axis["type"] == "date"
    assert axis["range"] == ["2025-01-05 16:34:29", "2025-01-06 16:34:29"]
    wide: dict = {}
    date_axis(wide, ["2025-01-06T04:34:29Z", "2025-03-06T04:34:29Z"])
    assert wide == {"type": "date"}  # plotly's own range and ticks
