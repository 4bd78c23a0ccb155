"""The site shows memory, energy and latencies where measured and "not measured" where not,
marks unstable runs, and says lower is better on the axes of metrics where it is."""

from __future__ import annotations

import json
import re
from pathlib import Path

from site_factory import entry, write_store

from benchlab.layout import Store
from benchlab.publish.context import best_per_machine
from benchlab.publish.data import load_public
from benchlab.publish.site import render_pages

ENERGY = "Energy per token (J, lower is better)"
NO_COUNTER = "not measured: no energy counter on this device"


def _extra() -> list:
    """A series with energy, memory and latencies on gpu-box; one without energy on the
    laptop whose newest run is unstable."""
    measured = [
        entry("gpu-box", "Tiny-Energy", "q4", day, 20.0, joules_per_token=0.5 + day,
              peak_rss_mb=512.0, gpu_mem_peak_mb=2048.0, decode_ms_per_token=50.0 - day,
              ttft_ms=120.0)
        for day in range(4)
    ]  # fmt: skip
    bare = [
        entry("laptop", "Tiny-Energy", "q4", day, 5.0, peak_rss_mb=300.0,
              tags=["batch", "unstable"] if day == 3 else ["batch"])
        for day in range(4)
    ]  # fmt: skip
    return measured + bare


def _files(store: Path) -> dict[str, str]:
    write_store(store, _extra())
    return render_pages(load_public(Store(store))).files


def _series_page(files: dict[str, str], machine: str) -> dict:
    """The data the one series page draws a series from (bl/series/<sid>.js)."""
    pages = [
        _payload(text)
        for path, text in files.items()
        if path.startswith("bl/series/s") and "Tiny-Energy" in text and machine in text
    ]
    assert len(pages) == 1
    return pages[0]


def _sid(page: dict) -> str:
    return dict(page["identity"])["series"]


def _runs(files: dict[str, str], sid: str) -> dict[str, dict]:
    """The series' run details, each run's measures as [name, value] rows again (the file
    names the measures once)."""
    text = next(t for p, t in files.items() if p.startswith("bl/runs/") and sid in p)
    payload = _payload(text)
    for run in payload["runs"].values():
        run["measures"] = list(zip(payload["measure_names"], run["measures"], strict=True))
    return payload["runs"]


def _payload(text: str) -> dict:
    """The JSON a `window.X[key] = {...}` script assigns."""
    body = text.split("]=", 1)[1]
    return json.loads(body[: body.rindex("}") + 1])


def _row(page: dict, name: str) -> str:
    return dict(page["measures"])[name]


def test_series_pages_show_measures_or_say_not_measured(store):
    files = _files(store)
    measured = _series_page(files, "gpu-box")
    bare = _series_page(files, "laptop")
    assert _row(measured, ENERGY) == "3.50 J"
    assert _row(measured, "Peak GPU memory (MiB, lower is better)") == "2,048.00 MiB"
    assert _row(bare, ENERGY) == NO_COUNTER
    assert _row(bare, "Time to first token (ms, lower is better)") == "not measured"
    assert _row(bare, "Peak resident memory (MiB, lower is better)") == "300.00 MiB"
    assert not any(re.fullmatch(r"0(\.0+)?( \w+)?", value) for _, value in bare["measures"])


def test_run_details_say_not_measured_and_mark_unstable_runs(store):
    files = _files(store)
    runs = _runs(files, _sid(_series_page(files, "laptop")))
    assert runs
    for run in runs.values():
        measures = dict(run["measures"])
        assert measures[ENERGY] == NO_COUNTER
        assert "0" not in measures[ENERGY]
    unstable = [r for r in runs.values() if "unstable" in r]
    assert len(unstable) == 1 and "10%" in unstable[0]["unstable"]
    assert "policies.max_cv" in unstable[0]["unstable"]
    measured = _runs(files, _sid(_series_page(files, "gpu-box")))
    assert {dict(r["measures"])[ENERGY] for r in measured.values()} >= {"0.50 J", "3.50 J"}
    assert not any("unstable" in r for r in measured.values())


def test_series_page_badges_its_unstable_run(store):
    files = _files(store)
    bare = _series_page(files, "laptop")
    assert bare["unstable"] and "10%" in bare["unstable"]  # the page script badges it
    assert bare["unstable_count"] == 1
    assert _series_page(files, "gpu-box")["unstable"] is None


def _chart(files: dict[str, str], slug: str) -> dict:
    """A chart of a series page (in its series' data file), or of another page."""
    for path, text in files.items():
        if path.startswith("bl/series/s") and slug.split("-")[1] in path:
            found = [c for c in _payload(text)["charts"] if c["slug"] == slug]
            if found:
                return found[0]
    text = next(t for p, t in files.items() if p.startswith("bl/charts/") and slug in p)
    return _payload(text)


def _figure(chart: dict) -> dict:
    """The plotly figure however deep the chart file nests it."""
    if "data" in chart and "layout" in chart:
        return chart
    for value in chart.values():
        if isinstance(value, dict):
            found = _figure(value)
            if found:
                return found
    return {}


def test_lower_is_better_charts_say_so_and_unstable_runs_are_ringed(store):
    files = _files(store)
    sid = _sid(_series_page(files, "gpu-box"))
    energy = _figure(_chart(files, f"series-{sid}-joules_per_token"))
    assert energy["layout"]["yaxis"]["title"]["text"] == "Energy per token, J (lower is better)"
    ttft = _figure(_chart(files, f"series-{sid}-ttft_ms"))
    assert "lower is better" in ttft["layout"]["yaxis"]["title"]["text"]
    peak = _figure(_chart(files, f"series-{sid}-peak"))
    assert "lower is better" not in peak["layout"]["yaxis"]["title"]["text"]
    assert not any(t.get("name") == "unstable runs" for t in peak["data"])
    laptop = _sid(_series_page(files, "laptop"))
    assert not any(c["slug"] == f"series-{laptop}-joules_per_token"
                   for c in _series_page(files, "laptop")["charts"])  # fmt: skip
    shaky = _figure(_chart(files, f"series-{laptop}-peak"))
    ringed = [t for t in shaky["data"] if t.get("name") == "unstable runs"]
    assert len(ringed) == 1 and len(ringed[0]["x"]) == 1
    assert ringed[0]["marker"]["symbol"] == "circle-open"


def test_best_of_a_lower_is_better_metric_is_the_smallest():
    runs = [
        entry("gpu-box", "M", "q4", 0, 1.0, ttft_ms=90.0).model_dump(),
        entry("gpu-box", "M", "q8", 0, 1.0, ttft_ms=30.0).model_dump(),
        entry("laptop", "M", "q4", 0, 1.0, ttft_ms=60.0).model_dump(),
    ]
    for run in runs:
        run["series"] = run["run_id"][:-17]
    histories = [[run] for run in runs]  # one run per series
    best = best_per_machine(histories, ("ttft_ms",))
    assert [item.level.value for item in best] == [30.0, 60.0]
    assert [item.latest["machine_id"] for item in best] == ["gpu-box", "laptop"]
    fastest = best_per_machine(histories, ("peak_tok_per_sec",))
    assert len(fastest) == 2
