"""A llama-bench history as users make it (llama_fleet: `-o json` files of pp512 and tg128
with five repeats, imported with `bench migrate`), its site in a real headless Chromium.

The model page's charts draw every metric its pickers offer, with every filter at All; the
machine pages draw; the compare page offers every machine and every build of a fleet of 15
machines and 20 builds, and the rows it computes in the browser for a pair are those
`bench compare` prints for that pair (ARCHITECTURE.md, Compare).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llama_fleet import build_numbers, machine_ids, write_llama_fleet
from test_browser import Watched, serve

from benchlab.cli import main
from benchlab.publish.build import build_site
from benchlab.publish.data import load_public

pytestmark = pytest.mark.integration

MACHINES = 15
BUILDS = 20
MODEL_PAGE = "models/llama-1b.html"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("llama") / "experiments" / "benchmark"
    store = write_llama_fleet(root, machines=MACHINES, builds=BUILDS)
    return root, build_site(load_public(store), root.parent.parent / "out")


@pytest.fixture(scope="module")
def served(fleet: tuple[Path, Path]) -> Iterator[str]:
    with serve(fleet[1]) as url:
        yield url


DRAWN = """id => {
  const d = document.getElementById(id);
  const lines = (d.data || []).filter(t => (t.visible === true || t.visible === undefined)
      && (t.x || []).length > 0);
  const note = d.parentNode.querySelector('.bl-nomatch');
  return {drawn: lines.length, colors: [...new Set(lines.map(t => (t.line || {}).color))],
          nomatch: note ? !note.hidden : false,
          empty: [...document.querySelectorAll('.bl-empty')].map(e => e.textContent)};
}"""


def _charts(watched: Watched) -> list[str]:
    return watched.page.eval_on_selector_all(".bl-chart", "ds => ds.map(d => d.id)")


def test_every_metric_in_the_model_pages_pickers_draws_runs(served, browser):
    watched = Watched(browser)
    try:
        watched.open(served + MODEL_PAGE)
        charts = _charts(watched)
        assert any(c.endswith("-trend") for c in charts)
        assert not any(c.endswith("-scaling") for c in charts)  # batch 1 alone: left out
        picked = 0
        for chart in charts:
            state = watched.page.evaluate(DRAWN, chart)
            assert state["drawn"] > 0 and not state["nomatch"] and not state["empty"], chart
            picker = f"select[data-metric='{chart.removeprefix('chart-')}']"
            for metric in watched.page.eval_on_selector_all(
                f"{picker} option", "os => os.map(o => o.value)"
            ):
                watched.page.select_option(picker, metric)
                state = watched.page.evaluate(DRAWN, chart)
                assert state["drawn"] > 0 and not state["nomatch"], (chart, metric)
                picked += 1
        assert picked >= 6  # the by-machine chart's metrics and the trend's throughputs
        # The trend's lines are told apart by machine: ten colours or more among the
        # lines it carries for a metric (a machine each), not one per precision.
        carried = watched.page.evaluate(
            """() => document.getElementById('chart-model-llama-1b-trend').data
                 .filter(t => t.visible !== false && t.name !== 'regression')
                 .map(t => t.line.color)"""
        )
        assert len(carried) == MACHINES and len(set(carried)) >= 10
        # Tables sort by a column that has values (llama-bench measures no batched peak).
        heads = watched.page.locator("#fastest-q4-0 th").all_inner_texts()
        assert "Peak aggregate tok/s" not in heads and heads[1] == "Decode tok/s"
        assert "not measured" not in watched.page.inner_text("#fastest-q4-0")
        assert not watched.errors and not watched.outside
    finally:
        watched.close()


def test_machine_pages_draw(served, browser):
    watched = Watched(browser)
    try:
        for machine in machine_ids(MACHINES)[:3]:
            watched.open(served + f"machines/{machine}.html")
            for chart in _charts(watched):
                state = watched.page.evaluate(DRAWN, chart)
                assert state["drawn"] > 0 and not state["nomatch"] and not state["empty"], chart
        assert not watched.errors and not watched.outside
    finally:
        watched.close()


def _cli(root: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["--store", str(root), "compare", *argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def _in_browser(watched: Watched, axis: str, match: str, a: int, b: int) -> dict[str, Any]:
    """The pair as the page computes it, from the two summaries it has loaded."""
    return watched.page.evaluate(
        """([axis, match, a, b]) => window.BENCHLAB_COMPARE.comparePair(
             window.BENCHLAB_CMP_INDEX.index, axis, match,
             window.BENCHLAB_CMP[axis + '-' + a], window.BENCHLAB_CMP[axis + '-' + b])""",
        [axis, match, a, b],
    )


def _key(row: dict[str, Any]) -> tuple[Any, ...]:
    return (row["model"], row["precision"], row.get("machine_id"), row.get("shape"),
            row["test"], row["metric"])  # fmt: skip


def _agree(cli: dict[str, Any], page: dict[str, Any]) -> None:
    ours = {_key(r): r for r in page["rows"]}
    assert len(ours) == len(page["rows"]) == len(cli["rows"]) > 0
    assert (page["only_a"], page["only_b"]) == (cli["only_a"], cli["only_b"])
    for row in cli["rows"]:
        mine = ours[_key(row)]
        for field in ("a", "b", "speedup", "pm_a", "pm_b"):
            if row[field] is None:
                assert mine[field] is None, (field, row)
            else:
                assert mine[field] == pytest.approx(row[field], rel=1e-9), (field, row)
        assert mine["mark"] == row["mark"], row
        assert (mine["n_a"], mine["n_b"]) == tuple(
            (row[s] or {}).get("n") for s in ("stats_a", "stats_b")
        )
        assert mine.get("settings_a") == row.get("settings_a"), row


def _options(watched: Watched, name: str) -> list[str]:
    return watched.page.eval_on_selector_all(
        f"[data-compare={name}] option", "os => os.map(o => o.textContent)"
    )


def test_compare_offers_every_machine_and_build_and_agrees_with_the_cli(
    fleet, served, browser, capsys
):
    root, _ = fleet
    machines = machine_ids(MACHINES)
    watched = Watched(browser)
    try:
        watched.open(served + f"compare.html#by=machine&a={machines[1]}&b={machines[13]}")
        watched.page.wait_for_selector("#bl-compare tbody tr", timeout=10_000)
        assert _options(watched, "a") == _options(watched, "b") == machines
        index = {m: i for i, m in enumerate(machines)}
        clis = {}
        for match in ("best", "exact"):
            cli = clis[match] = _cli(root, capsys, "--by", "machine", "--a", machines[1],
                                     "--b", machines[13], "--match", match)  # fmt: skip
            _agree(cli, _in_browser(watched, "machine", match, index[machines[1]], 13))
        # The table shows the marks the CLI gives (each side is one run of its newest
        # build: `?` unless the runs carry their samples).
        marks = watched.page.locator("#bl-compare td[data-key=mark]").all_inner_texts()
        assert sorted(marks) == sorted(r["mark"] for r in clis["best"]["rows"])
        # The builds: every one offered; the page's rows for the pair across the step.
        watched.page.select_option("[data-compare=axis]", "build")
        watched.page.wait_for_selector("#bl-compare tbody tr", timeout=10_000)
        builds = _options(watched, "a")
        assert len(builds) == BUILDS
        assert [b.split()[0] for b in builds] == [f"b{n}" for n in build_numbers(BUILDS)]
        before, after = 7, 8  # llama_fleet.STEP_BUILD is the ninth build
        watched.page.select_option("[data-compare=a]", str(before))
        watched.page.select_option("[data-compare=b]", str(after))
        watched.page.wait_for_selector("#bl-compare tbody tr", timeout=10_000)
        cli = _cli(root, capsys, "--by", "build", "--a", builds[before].split()[0],
                   "--b", builds[after].split()[0])  # fmt: skip
        _agree(cli, _in_browser(watched, "build", "exact", before, after))
        count = watched.page.inner_text("[data-compare=count]")
        assert count.startswith(f"{len(cli['rows'])} rows")
        assert not watched.errors and not watched.outside
    finally:
        watched.close()
