"""The site over a llama-bench history made as users make it (tests/kit/llama_steps): its
Regressions page lists the steps `bench regression --detect` finds, in every metric; the
home page lists those in effect; the series page of a prefill-only regression draws its
prefill chart with the step and fails that metric's gate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from page_tables import table_rows
from tests.kit.llama_steps import make_repo_store

from benchlab.cli import main
from benchlab.layout import Store
from benchlab.publish.build import expand
from benchlab.publish.data import load_public
from benchlab.publish.links import series_file
from benchlab.publish.site import render_pages
from benchlab.publish.tables import metric_name


@pytest.fixture(scope="module")
def llama_site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    store = make_repo_store(tmp_path_factory.mktemp("llama-site"))
    return store, render_pages(load_public(Store(store))).files


def _cli_steps(store: Path, capsys: pytest.CaptureFixture) -> list[dict]:
    capsys.readouterr()
    main(["--store", str(store), "regression", "--detect", "--format", "json"])
    return json.loads(capsys.readouterr().out)


def test_the_regressions_page_lists_the_steps_the_cli_finds(
    llama_site: tuple[Path, dict[str, str]], capsys: pytest.CaptureFixture
) -> None:
    store, files = llama_site
    cli = _cli_steps(store, capsys)
    assert len(cli) >= 4
    page = expand(files, "regressions.md")
    assert "No step found" not in page
    listed = sorted(
        (row[0], row[2], row[1].split(" % ", 1)[1], float(row[1].split()[0]))
        for row in table_rows(page, "all-steps")
    )
    expected = sorted(
        (f"{s['status']} {s['kind']}" if s["status"] != "confirmed" else s["kind"],
         s["label"], metric_name(s["metric"]), round(s["change"], 1))
        for s in cli
    )  # fmt: skip
    assert listed == expected


def test_the_home_page_lists_the_regressions_in_effect(
    llama_site: tuple[Path, dict[str, str]], capsys: pytest.CaptureFixture
) -> None:
    store, files = llama_site
    cli = _cli_steps(store, capsys)
    in_effect = {
        (s["machine_id"], metric_name(s["metric"]))
        for s in cli
        if s["kind"] == "regression" and s["open"] and s["status"] == "confirmed"
    }
    assert in_effect == {("lab03", "decode"), ("lab07", "prefill")}
    rows = table_rows(expand(files, "index.md"), "open-regressions")
    listed = {(row[1].split()[0], row[2].split(" % ", 1)[1].split()[0]) for row in rows}
    assert listed == in_effect


def test_the_series_page_of_a_prefill_regression_draws_and_gates_prefill(
    llama_site: tuple[Path, dict[str, str]], capsys: pytest.CaptureFixture
) -> None:
    store, files = llama_site
    [step] = [s for s in _cli_steps(store, capsys) if s["machine_id"] == "lab07"]
    text = files[f"bl/series/{series_file(step['series'], '.js')}"]
    payload = json.loads(text[text.index("]=") + 2 : text.rindex("}") + 1])
    slugs = [chart["slug"] for chart in payload["charts"]]
    assert (
        f"series-{step['series']}-prefill" in slugs and f"series-{step['series']}-decode" in slugs
    )
    assert payload["steps"] is not None and "prefill" in payload["steps"]["html"]
    gates = {g["metric"]: g["verdict"] for g in payload["metric_gates"]}
    assert gates == {"decode_tok_per_sec": "passed", "prefill_tok_per_sec": "failed"}
    assert payload["gate"]["verdict"] == "failed"  # never "gate passed" on a series 15 % down


def test_the_series_page_shows_a_level_for_every_metric_at_the_cli_level(
    llama_site: tuple[Path, dict[str, str]], capsys: pytest.CaptureFixture
) -> None:
    """Not the first metric alone: decode and prefill each at its own level, the one
    `bench best --metric M --by series` gives (prefill's own step not averaged across)."""
    store, files = llama_site
    [step] = [s for s in _cli_steps(store, capsys) if s["machine_id"] == "lab07"]
    text = files[f"bl/series/{series_file(step['series'], '.js')}"]
    payload = json.loads(text[text.index("]=") + 2 : text.rindex("}") + 1])
    shown = {lv["metric"]: lv["value"] for lv in payload["levels"]}
    assert set(shown) == {"decode_tok_per_sec", "prefill_tok_per_sec"}
    for metric, value in shown.items():
        capsys.readouterr()
        main(["--store", str(store), "best", "--metric", metric, "--by", "series",
              "--machine", "lab07", "--format", "json"])  # fmt: skip
        [row] = json.loads(capsys.readouterr().out)
        assert value == pytest.approx(row["level"]["value"]), metric
    assert {lv["unit"] for lv in payload["levels"]} == {"tok/s"}


def test_chart_step_markers_mark_every_metric_not_peak_only(
    llama_site: tuple[Path, dict[str, str]],
) -> None:
    """`charts.find_regressions` (what a trend drawn without the site's steps marks) finds
    the steps of each metric, so a prefill-only regression is marked on the prefill trend."""
    from tests.kit.llama_steps import PLANTED

    from benchlab.catalog.read import load_catalog
    from benchlab.publish.charts import find_regressions, trend_chart

    store, _ = llama_site
    runs = [r for r in load_catalog(store / "catalog.json").runs if r["machine_id"] == "lab07"]
    found = find_regressions(runs)
    [planted] = [p for p in PLANTED if p.machine == "lab07"]
    assert {g.step.metric for g in found} == {planted.metric}
    assert all(g.value == g.run[planted.metric] and g.drop > 0.1 for g in found)
    chart = trend_chart(runs, metrics=["decode_tok_per_sec", "prefill_tok_per_sec"])
    marks = [t for t in chart.figure["data"] if t["name"] == "regression"]
    assert [t["meta"]["when"]["metric"] for t in marks] == [planted.metric]
