"""Charts: what each figure shows, the outputs of `bench chart`, and its bad-input paths."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
from site_factory import XSS_MODEL, entry

from benchlab.catalog.read import load_catalog
from benchlab.cli import main
from benchlab.layout import Store
from benchlab.publish.charts import (
    build_charts,
    chart_json,
    cost_per_million,
    latest_by_series,
    scaling_chart,
    shown,
    throughput_chart,
    trend_chart,
)
from benchlab.publish.charts.levels import machine_chart
from benchlab.publish.charts.output import COMPACT_KEY, expand_trace
from benchlab.publish.data import load_public
from benchlab.query.filters import Filters
from benchlab.query.level import series_levels


def test_throughput_chart_shows_each_machine_at_its_current_level(public_store):
    data = load_public(Store(public_store))
    [chart] = build_charts(data, Filters(model="SmolLM2-135M", precision="q8"), ["throughput"])
    [trace] = [t for t in chart.figure["data"] if t["visible"]]  # peak first, then a selector
    metrics = [m["name"] for m in chart.figure["layout"]["meta"]["metrics"]]
    assert metrics[0] == "peak_tok_per_sec" and "decode_tok_per_sec" in metrics
    assert trace["x"] == ["gpu-box", "laptop", "pi5"]
    runs = shown(data.runs, Filters(model="SmolLM2-135M", precision="q8"))
    levels = {lv.latest["machine_id"]: lv for lv in series_levels(runs, "peak_tok_per_sec")}
    assert len(levels) == 3
    assert trace["y"] == [levels[m].level.value for m in trace["x"]]
    # The level is the mean of the newest segment, not the newest run alone.
    newest = latest_by_series(runs)
    assert trace["y"] != [
        next(r for r in newest.values() if r["machine_id"] == m)["peak_tok_per_sec"]
        for m in trace["x"]
    ]
    assert all(p[4].endswith("Z") and p[1] == "SmolLM2-135M" for p in trace["customdata"])
    assert all("4 threads" in p[9] and p[6] == "benchlab 0.1.0" for p in trace["customdata"])
    assert all(p[10].startswith("mean of 12 runs") for p in trace["customdata"])


def test_selection_filters_machines_and_run_type(public_store):
    data = load_public(Store(public_store))
    charts = build_charts(data, Filters(machines=("pi5",), run_type="batch"))
    # (a trend's later metric shares its line's points: `meta.like`, no customdata of its own)
    machines = {p[0] for c in charts for t in c.figure["data"] for p in t.get("customdata", [])}
    assert machines == {"pi5"}
    assert all(c.empty for c in build_charts(data, Filters(run_type="kernel")))


def test_failed_runs_never_reach_a_chart(public_store):
    data = load_public(Store(public_store))
    drawn = {
        p[3] for c in build_charts(data) for t in c.figure["data"] for p in t.get("customdata", [])
    }  # fmt: skip
    failed = {r["run_id"] for r in data.runs if r.get("status") == "failed"}
    assert failed and not drawn & failed


def test_cost_per_token_uses_cost_per_hour_of_inventory_then_specs(public_store):
    data = load_public(Store(public_store))
    assert cost_per_million(3.6, 1000.0) == pytest.approx(1.0)
    [chart] = build_charts(data, Filters(precision="q8"), ["cost"])
    machines = {row["machine"] for row in chart.rows}
    assert machines == {"gpu-box", "laptop"}  # pi5 has no price
    for row in chart.rows:
        expected = row["cost_per_hour"] / (row["tok_per_sec"] * 3600) * 1e6
        assert row["usd_per_million_tokens"] == pytest.approx(expected, rel=1e-5)
    laptop = next(r for r in chart.rows if r["machine"] == "laptop")
    assert laptop["cost_per_hour"] == 0.25  # from machines/laptop/specs.json


def test_scaling_curve_reads_batch_points(public_store):
    data = load_public(Store(public_store))
    [chart] = build_charts(data, Filters(machines=("gpu-box",), precision="f32"), ["scaling"])
    [trace] = chart.figure["data"]
    assert trace["x"] == [1, 2, 4, 8]
    assert trace["y"] == sorted(trace["y"])


def test_trend_marks_the_regression(public_store):
    data = load_public(Store(public_store))
    [chart] = build_charts(data, Filters(model="llama-3.2-1b", precision="q8"), ["trend"])
    marked = [t for t in chart.figure["data"] if t["name"] == "regression"]
    assert marked, "the laptop's halved throughput must be marked"
    assert {p[0] for p in marked[0]["customdata"]} == {"laptop"}
    flagged = {row["run_id"] for row in chart.rows if row["regression"]}
    assert flagged and all(rid.startswith("laptop-") for rid in flagged)


def test_user_strings_are_entities_in_figures_and_json_cannot_close_a_script(public_store):
    data = load_public(Store(public_store))
    [chart] = build_charts(data, Filters(model="xss-probe"), ["throughput"])
    text = chart_json(chart)
    assert "<" not in text and ">" not in text
    decoded = json.loads(text)
    assert expand_trace(decoded["data"][0])["customdata"][0][1].startswith("&lt;script&gt;")
    assert chart.rows[0]["model"] == XSS_MODEL  # CSV keeps the real name


def test_chart_json_writes_shared_customdata_once_and_expands_to_the_figure(public_store):
    """A trace's points carry only the customdata fields that differ between them; expanding
    (as benchlab.js does before plotly draws) gives back exactly the figure's customdata."""
    charts = build_charts(load_public(Store(public_store)))
    compacted = 0
    for chart in charts:
        decoded = json.loads(chart_json(chart))
        figure = json.loads(json.dumps(chart.figure["data"]))
        assert [expand_trace(t) for t in decoded["data"]] == figure, chart.slug
        for trace, written in zip(figure, decoded["data"], strict=True):
            if COMPACT_KEY in written:
                compacted += 1
                vary = written[COMPACT_KEY]["vary"]
                assert all(len(p) == len(vary) for p in written["customdata"])
                tight = {"separators": (",", ":")}
                assert len(json.dumps(written, **tight)) < len(json.dumps(trace, **tight))
                if chart.slug == "trend":
                    # A trend trace is one series: run id and time differ point to point,
                    # machine, model, precision, label and series id are written once.
                    assert {3, 4} <= set(vary) and not {0, 1, 2, 5, 7} & set(vary)
    assert compacted >= 9


def test_chart_json_is_deterministic(public_store):
    first = [chart_json(c) for c in build_charts(load_public(Store(public_store)))]
    second = [chart_json(c) for c in build_charts(load_public(Store(public_store)))]
    assert first == second


def test_bench_chart_writes_a_directory_with_plotly_once(public_store, capsys):
    out = public_store / "charts"
    assert main(["--store", str(public_store), "chart", "--output", str(out)]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert names == [
        "benchlab.css",
        "benchlab.js",
        "cost.html",
        "decode.html",
        "plotly.min.js",
        "prefill-decode.html",
        "scaling.html",
        "threads.html",
        "throughput.html",
        "trend.html",
    ]
    page = (out / "throughput.html").read_text()
    assert '<script src="plotly.min.js"' in page and "cdn" not in page.lower()
    assert "Plotly.newPlot" not in page  # plotly.js is not embedded, benchlab.js draws


def test_bench_chart_single_file_follows_the_seed_flags(public_store):
    target = public_store / "out" / "batch-comparison.html"
    argv = ["--store", str(public_store), "chart", "--machines", "laptop,pi5"]
    assert main([*argv, "--run-type", "batch", "--output", str(target)]) == 0
    text = target.read_text()
    assert 'data-chart="scaling"' in text
    assert '"gpu-box"' not in text


def test_bench_chart_csv(public_store):
    target = public_store / "t.csv"
    argv = ["--store", str(public_store), "chart", "--model", "SmolLM2-135M", "--format", "csv"]
    assert main([*argv, "--output", str(target)]) == 0
    rows = list(csv.DictReader(io.StringIO(target.read_text())))
    assert {r["machine"] for r in rows} == {"gpu-box", "laptop", "pi5"}
    assert {r["precision"] for r in rows} == {"q8", "f32"}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--format", "png", "--output", "x.csv"], "ends in .csv but --format is png"),
        (["--chart", "trend", "--chart", "cost", "--output", "x.html"], "one file holds one"),
    ],
)
def test_bench_chart_bad_input_is_one_line_and_writes_nothing(public_store, capsys, argv, message):
    before = sorted(public_store.rglob("*"))
    argv = [a if not a.startswith("x.") else str(public_store / a) for a in argv]
    assert main(["--store", str(public_store), "chart", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert sorted(public_store.rglob("*")) == before


def test_missing_catalog_says_what_to_do(store: Path, capsys):
    assert main(["--store", str(store), "chart", "--output", str(store / "c")]) == 2
    err = capsys.readouterr().err
    assert "catalog.json: file not found" in err and "bench catalog build" in err
    assert not (store / "c").exists()


def test_broken_catalog_names_file_and_field(public_store, capsys):
    data = json.loads(public_store.joinpath("catalog.json").read_text())
    entry = load_catalog(public_store / "catalog.json").runs[2]
    data["runs"] = [{**entry, "timestamp": 5}]  # a pending run in the v3 head
    public_store.joinpath("catalog.json").write_text(json.dumps(data))
    assert main(["--store", str(public_store), "site", "build", "--no-mkdocs"]) == 2
    err = capsys.readouterr().err.strip()
    assert "catalog.json: $.runs[0]: timestamp" in err and len(err.splitlines()) == 1


@pytest.mark.integration
def test_png_and_svg_through_kaleido(public_store):
    out = public_store / "img"
    argv = ["--store", str(public_store), "chart", "--chart", "throughput", "--chart", "trend"]
    assert main([*argv, "--format", "svg", "--output", str(out)]) == 0
    svg = (out / "throughput.svg").read_text()
    assert svg.startswith("<svg") and "laptop" in svg
    # The y axis carries numbers of its own (a static image has no hover).
    ticks = re.findall(r'class="ytick"[^>]*>.*?<text[^>]*>([^<]+)</text>', svg)
    assert len(ticks) >= 3 and all(re.search(r"\d", t) for t in ticks), ticks
    target = out / "t.png"
    assert main([*argv[:5], "--format", "png", "--output", str(target)]) == 0
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _dicts(*runs):
    return [run.model_dump(mode="json") for run in runs]


def test_a_wide_throughput_range_gets_a_log_axis():
    slow_and_fast = _dicts(
        entry("pi5", "tiny", "f32", 0, 2.0), entry("gpu", "tiny", "f32", 0, 900.0)
    )
    similar = _dicts(entry("a", "tiny", "f32", 0, 100.0), entry("b", "tiny", "f32", 0, 150.0))
    for runs, axis in ((slow_and_fast, "log"), (similar, None)):
        for chart in (scaling_chart(runs), trend_chart(runs), throughput_chart(runs)):
            if chart.figure["data"] and chart.figure["data"][0].get("orientation") == "h":
                continue
            yaxis = chart.figure["layout"]["yaxis"]
            assert yaxis.get("type") == axis, chart.slug
            # A log axis says so on its title; a linear one starts at zero.
            assert ("(log scale)" in yaxis["title"]["text"]) == (axis == "log"), chart.slug


def test_peak_aggregate_and_decode_never_share_an_axis(public_store):
    data = load_public(Store(public_store))
    peak, decode = build_charts(data, Filters(model="SmolLM2-135M"), ["throughput", "decode"])
    assert peak.figure["layout"]["yaxis"]["title"]["text"].startswith("Peak aggregate")
    assert decode.figure["layout"]["yaxis"]["title"]["text"].startswith("Decode")
    runs = shown(data.runs, Filters(model="SmolLM2-135M"))
    peaks = {lv.level.value for lv in series_levels(runs, "peak_tok_per_sec")}
    decodes = {lv.level.value for lv in series_levels(runs, "decode_tok_per_sec")}
    # The throughput chart offers every metric, each in traces and on an axis of its own.
    by_metric: dict[str, set[float]] = {}
    for trace in peak.figure["data"]:
        by_metric.setdefault(trace["meta"]["when"]["metric"], set()).update(trace["y"])
    assert by_metric["peak_tok_per_sec"] <= peaks and by_metric["decode_tok_per_sec"] <= decodes
    axes = {
        m["name"]: m["layout"]["title"]["text"] for m in peak.figure["layout"]["meta"]["metrics"]
    }
    assert axes["decode_tok_per_sec"].startswith("Decode") and axes["peak_tok_per_sec"].startswith(
        "Peak"
    )
    assert {y for t in decode.figure["data"] for y in t["y"]} <= decodes
    [split] = build_charts(data, Filters(model="SmolLM2-135M"), ["prefill-decode"])
    axes = {(t.get("yaxis", "y"), t["legendgroup"]) for t in split.figure["data"]}
    assert axes == {("y", "prefill"), ("y2", "decode")}


def test_colour_by_what_differs_most_a_second_channel_within_a_colour_and_the_top_drawn():
    runs = []
    for machine in ("a", "b", "c"):
        for model in ("m1", "m2", "m3"):
            for precision in ("q4", "q8"):
                runs += _dicts(*(entry(machine, model, precision, d, 10.0 + d) for d in range(3)))
    chart = trend_chart(runs)
    lines = chart.figure["data"]
    assert len(lines) == 16  # 18 series: the chart carries the top 16 (each has its own page)
    assert "(top 16 of 18 series)" in chart.figure["layout"]["title"]["text"]
    by_model: dict[str, set[str]] = {}
    for trace in lines:
        by_model.setdefault(trace["customdata"][0][1], set()).add(trace["line"]["color"])
    # Model and machine both have three values: colour goes to the model (STYLE_DIMS order).
    assert all(len(colors) == 1 for colors in by_model.values())
    assert len({c for colors in by_model.values() for c in colors}) == 3
    # Two lines of one colour never share a dash or a marker.
    for channel in ("dash", "symbol"):
        part = "line" if channel == "dash" else "marker"
        pairs = [(t["line"]["color"], t[part][channel]) for t in lines]
        assert len(set(pairs)) == len(pairs), channel
    # The legend names what differs, in words.
    assert lines[0]["name"] == "m1 · a · q4"
    drawn = [t for t in lines if t.get("visible", True) is True]
    assert len(drawn) == 8
    assert chart.figure["layout"]["meta"] == {"hidden": 8, "total": 16, "dropped": 2}


def test_series_chart_draws_band_steps_and_threshold_and_downsamples():
    from benchlab.detect.regress import detect
    from benchlab.publish.charts import MAX_POINTS, series_chart

    values = [100.0 + (i % 5) for i in range(400)] + [70.0 + (i % 5) for i in range(20)]
    runs = [
        entry("pi5", "tiny", "q4", i / 24, v / 8**0.7, decode_stddev=1.5).model_dump(mode="json")
        for i, v in enumerate(values)
    ]
    for run in runs:
        run["run_id"] = run["run_id"] + f"-{runs.index(run):04d}"
    steps = detect(runs)
    assert [s.kind for s in steps] == ["regression"]
    chart = series_chart(runs, steps, "s", "peak_tok_per_sec", 0.05)
    names = [t["name"] for t in chart.figure["data"]]
    assert names == ["runs", "detected step"]
    points = chart.figure["data"][0]
    assert len(points["x"]) <= MAX_POINTS + 1 and steps[0].first_bad_run in {
        p[3] for p in points["customdata"]
    }
    bands = [s for s in chart.figure["layout"]["shapes"] if s["type"] == "rect"]
    assert len(bands) == 2  # one threshold band per segment, split at the step
    decode = series_chart(runs, [], "d", "decode_tok_per_sec", 0.05)
    assert [t["name"] for t in decode.figure["data"]][:2] == ["+1 stddev", "± stddev"]


def test_runs_differing_only_in_threads_are_two_lines_of_the_trend(threads_store):
    data = load_public(Store(threads_store))
    filters = Filters(machines=("gpu-box",), model="smollm2-135m", precision="q8")
    [trend, throughput] = build_charts(data, filters, ["trend", "throughput"])[::-1]
    # The trend carries each throughput its runs measured; the peak's lines are drawn first.
    lines = [
        t for t in trend.figure["data"]
        if t["name"] != "regression" and t["meta"]["when"]["metric"] == "peak_tok_per_sec"
    ]  # fmt: skip
    assert len(lines) == 2
    # The legend names what differs, in words ("1 thread", never "t1").
    assert sorted(t["name"] for t in lines) == ["1 thread", "4 threads"]
    assert len({(t["line"]["color"], t["line"]["dash"], t["marker"]["symbol"]) for t in lines}) == 2
    assert all(len(t["x"]) == 12 for t in lines)
    assert {row["threads"] for row in trend.rows} == {1, 4}
    [bars] = [t for t in throughput.figure["data"] if t["visible"]]  # a bar per series
    assert bars["orientation"] == "h"  # one machine: a horizontal bar per series
    assert len(bars["y"]) == 2 and {p[5].split()[4] for p in bars["customdata"]} == {"t1", "t4"}
    assert {p[5].split("<br>")[1].split(" · ")[0] for p in bars["customdata"]} == {
        "1 thread",
        "4 threads",
    }


def test_trend_hover_names_the_build_change_of_a_regression(public_store):
    data = load_public(Store(public_store))
    [chart] = build_charts(data, Filters(machines=("laptop",), model="llama-3.2-1b"), ["trend"])
    # each metric's step is marked on that metric's lines (peak and decode stepped here)
    markers = {t["meta"]["when"]["metric"]: t for t in chart.figure["data"]
               if t["name"] == "regression"}  # fmt: skip
    assert set(markers) == {"peak_tok_per_sec", "decode_tok_per_sec"}
    marker = markers["peak_tok_per_sec"]
    assert marker["customdata"][0][9] == "version benchlab 0.1.0 → benchlab 0.2.0"
    assert "%{customdata[9]}" in marker["hovertemplate"]


MIN_DELTA_E = 15.0
"""The smallest deuteranopia-simulated CIE76 ΔE allowed between two colours drawn together
(the replaced palette had 2.4 between its 7th and 10th entries; Okabe-Ito's closest pair is
about 17)."""


def _colors(figure: dict) -> set[str]:
    """Every colour a figure's traces draw with (lines, markers, bars)."""
    found: set[str] = set()
    for trace in figure["data"]:
        for part in (trace.get("line") or {}, trace.get("marker") or {}):
            color = part.get("color")
            for c in color if isinstance(color, list) else [color]:
                if isinstance(c, str) and c.startswith("#") and len(c) == 7:
                    found.add(c.upper())
    return found


def test_colours_drawn_together_stay_apart_under_deuteranopia(fleet_store):
    from itertools import combinations

    from benchlab.publish.charts.palette import PALETTE, delta_e
    from benchlab.publish.site import render_pages

    # The measure finds what the issue saw in the old palette, so it can fail.
    assert delta_e("#b8913a", "#7fb13a") < 5.0
    assert min(delta_e(a, b) for a, b in combinations(PALETTE, 2)) >= MIN_DELTA_E
    files = render_pages(load_public(Store(fleet_store)), workers=1).files
    checked = 0
    for path, text in files.items():
        if not path.startswith(("bl/charts/model-", "bl/charts/machine-")):
            continue
        figure = json.loads(text[text.index("]=") + 2 :].rstrip().rstrip(";"))
        colors = _colors(figure) & {c.upper() for c in PALETTE}
        for a, b in combinations(sorted(colors), 2):
            assert delta_e(a, b) >= MIN_DELTA_E, (path, a, b)
        checked += len(colors) > 1
    assert checked >= 4


def test_log_ticks_are_one_two_five_with_their_magnitude():
    from benchlab.publish.charts.layout import log_axis, numeric_axis, tick_text, ticks_125

    assert ticks_125([3.0, 450.0]) == [2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0]
    assert [tick_text(v) for v in (0.05, 2.0, 500.0, 2000.0, 5e6)] == [
        "0.05",
        "2",
        "500",
        "2k",
        "5M",
    ]
    axis = {"title": {"text": "Decode tokens/s"}, "rangemode": "tozero", "dtick": 1}
    log_axis(axis, [0.5, 900.0])
    assert axis["type"] == "log" and "rangemode" not in axis and "dtick" not in axis
    assert axis["ticktext"][:3] == ["0.5", "1", "2"] and axis["ticktext"][-1] == "1k"
    assert axis["title"]["text"].endswith("(log scale)")
    threads = {"title": {"text": "Threads"}, "dtick": 1}
    numeric_axis(threads, list(range(1, 129)))  # 128 thread counts: a log axis, few ticks
    assert threads["type"] == "log" and len(threads["tickvals"]) <= 10
    few = {"title": {"text": "Threads"}}
    numeric_axis(few, [1, 2, 4, 8])
    assert few["type"] == "linear" and few["tickvals"] == [1, 2, 4, 8]


def test_bars_never_stand_on_a_log_axis():
    slow_and_fast = _dicts(
        entry("pi5", "tiny", "f32", 0, 0.5), entry("gpu", "tiny", "f32", 0, 900.0)
    )
    chart = throughput_chart(slow_and_fast)
    [trace] = [t for t in chart.figure["data"] if t["visible"]]
    assert chart.figure["layout"]["yaxis"]["type"] == "log"
    assert trace["type"] == "scatter" and trace["mode"] == "markers+text"  # dots, not bars
    close = _dicts(entry("a", "tiny", "f32", 0, 100.0), entry("b", "tiny", "f32", 0, 150.0))
    [bars] = throughput_chart(close).figure["data"]
    assert bars["type"] == "bar"


def test_every_machine_is_on_the_by_machine_chart_whatever_its_series_count():
    runs = []
    for threads in range(1, 25):  # 24 series on one fast machine
        for day in range(3):
            run = entry("big", "tiny", "q4", day, 100.0 + threads, threads=threads)
            runs += _dicts(run.model_copy(update={"run_id": f"{run.run_id}-{threads}"}))
    runs += _dicts(*(entry("small", "tiny", "q4", day, 10.0) for day in range(3)))
    runs += _dicts(*(entry("other", "tiny", "q8", day, 20.0) for day in range(3)))
    chart = throughput_chart(runs)
    shown_trace = next(t for t in chart.figure["data"] if t["visible"])
    assert shown_trace["x"] == ["big", "other", "small"]
    assert shown_trace["y"][0] == pytest.approx(124.0 * 8**0.7, rel=1e-3)  # big at 24 threads
    assert "24 threads" in shown_trace["customdata"][0][9]
    # A trace per filter state: at q8 only "other" ran.
    q8 = next(t for t in chart.figure["data"] if t["meta"]["when"]["precision"] == "q8")
    assert q8["x"] == ["other"] and q8["visible"] is False


def test_one_machine_carries_every_series_and_the_page_draws_the_best_40():
    runs = []
    for threads in range(1, 51):  # 50 series on one machine
        run = entry("big", "tiny", "q4", 0, float(threads), threads=threads)
        runs += _dicts(run.model_copy(update={"run_id": f"{run.run_id}-{threads}"}))
    chart = throughput_chart(runs)
    [trace] = chart.figure["data"]
    assert trace["orientation"] == "h" and len(trace["x"]) == 50
    assert trace["x"] == sorted(trace["x"])  # best last: the top of the chart
    assert chart.figure["layout"]["meta"]["tail"] == 40
    assert sum(row["drawn"] for row in chart.rows) == 40 and len(chart.rows) == 50


def test_the_best_of_a_lower_is_better_metric_is_the_smallest_and_the_axis_says_so():
    runs = _dicts(
        entry("a", "tiny", "q4", 0, 1.0, ttft_ms=90.0),
        entry("a", "tiny", "q8", 0, 1.0, ttft_ms=30.0),
        entry("b", "tiny", "q4", 0, 1.0, ttft_ms=60.0),
    )
    chart = machine_chart(runs, "x", ["peak_tok_per_sec", "ttft_ms"])
    [ttft] = [
        t
        for t in chart.figure["data"]
        if t["meta"]["when"] == {"model": "", "precision": "", "metric": "ttft_ms"}
    ]
    assert ttft["x"] == ["a", "b"] and ttft["y"] == [30.0, 60.0]
    assert "q8" in ttft["customdata"][0][9]  # a's best setting is named
    axes = {
        m["name"]: m["layout"]["title"]["text"] for m in chart.figure["layout"]["meta"]["metrics"]
    }
    assert axes["ttft_ms"] == "Time to first token, ms (lower is better)"
    assert "lower is better" not in axes["peak_tok_per_sec"]


def test_the_trend_draws_every_machine_before_a_fast_machines_twentieth_series():
    """24 series of one fast machine beside two slow machines: picked by speed alone the
    trend's 16 traces were all the fast machine's. Each machine's fastest comes first."""
    runs = []
    for threads in range(1, 25):
        for day in range(3):
            run = entry("big", "tiny", "q4", day, 100.0 + threads, threads=threads)
            runs += _dicts(run.model_copy(update={"run_id": f"{run.run_id}-{threads}"}))
    runs += _dicts(*(entry("small", "tiny", "q4", day, 10.0) for day in range(3)))
    runs += _dicts(*(entry("other", "tiny", "q8", day, 20.0) for day in range(3)))
    figure = trend_chart(runs, regressions=[]).figure
    kept = [t for t in figure["data"] if t.get("mode") == "lines+markers"]
    drawn = [t for t in kept if t.get("visible", True) is True]
    assert len(kept) == 16 and "top 16 of 26 series" in figure["layout"]["title"]["text"]
    assert {t["customdata"][0][0] for t in drawn} == {"big", "small", "other"}
    assert sum(t["customdata"][0][0] == "big" for t in kept) == 14


def test_the_chart_of_a_machine_whose_only_run_failed_is_empty_not_an_index_error() -> None:
    """A machine page's throughput chart reads the ok runs' tails (none) and the metrics
    its runs carry (none): it used to index the first of no metrics."""
    from benchlab.publish.charts.levels import present_metrics

    failed = {"run_id": "pi5-x-q8-batch-0-20250106T000000Z", "machine_id": "pi5"}
    failed.update(status="failed", model="x", precision="q8", tags=[])
    metrics = present_metrics([failed])
    assert metrics == []
    chart = machine_chart([], "machine-pi5-throughput", metrics)
    assert chart.slug == "machine-pi5-throughput" and chart.rows == []


def test_bar_labels_are_three_figures_never_e_notation(public_store):
    from benchlab.publish.charts.levels import three_figures

    assert [three_figures(v) for v in (2549.3, 123.4, 1.234, 0.01234, 99999.0)] == [
        "2,550", "123", "1.23", "0.0123", "100,000",
    ]  # fmt: skip
    data = load_public(Store(public_store))
    [chart] = build_charts(data, Filters(model="SmolLM2-135M", precision="q8"), ["throughput"])
    labelled = [t for t in chart.figure["data"] if t.get("text")]
    assert labelled
    for trace in labelled:
        assert trace["text"] == [three_figures(v) for v in trace["y"] or trace["x"]]


def test_every_axis_says_which_way_is_better():
    from benchlab.publish.charts.layout import METRIC_TITLES

    assert METRIC_TITLES["decode_tok_per_sec"] == "Decode tokens/s (higher is better)"
    assert METRIC_TITLES["peak_tok_per_sec"].endswith("(higher is better)")
    assert all(t.endswith("is better)") for t in METRIC_TITLES.values()), METRIC_TITLES
