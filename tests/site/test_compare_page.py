"""The compare page in a real headless Chromium, on a store whose machines share no thread
count for one model: laptop ran SmolLM2-135M q8 at 8 threads too, pi5 at 2, and both ran 26
more small models (so a pair has more rows than one page of the table holds).

One test per promise: cross-machine rows (each side at its best settings, named) with
significance marks; every row reachable (a count, pages, no silent cap) and a filter that
matches nothing says so; the sort lives in the URL and survives a reload; no plotly where no
chart is drawn; no sideways scrolling of the page at 1440 and 390 px, Model kept in view. And
the CLI and the site print the same numbers for one comparison.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from site_factory import entry, write_store
from test_browser import Watched, serve

from benchlab.cli import main
from benchlab.layout import Store, write_model
from benchlab.models import CatalogEntry, InventoryEntry, MachineInventory
from benchlab.publish.build import build_site
from benchlab.publish.data import load_public

pytestmark = pytest.mark.integration

EXTRA_MODELS = 26


def extra_runs() -> list[CatalogEntry]:
    """laptop at 8 threads (its fastest) and pi5 at 2 (its slowest) on SmolLM2-135M q8, and
    EXTRA_MODELS small models on both machines, three runs each."""
    out = []
    for day in range(12):
        for machine, threads, rate in (("laptop", 8, 80.0), ("pi5", 2, 1.2)):
            run = entry(machine, "SmolLM2-135M", "q8", day, rate * (1 + 0.01 * (day % 3)),
                        threads=threads)  # fmt: skip
            tag = f"0000t{threads:03d}"
            out.append(run.model_copy(update={"run_id": run.run_id.replace("0000abcd", tag)}))
    for n in range(EXTRA_MODELS):
        for machine, speed in (("laptop", 8.0), ("pi5", 1.0)):
            for day in range(3):
                out.append(entry(machine, f"Tiny-{n:02d}", "q8", day, speed * (1 + 0.02 * day)))
    return out


def _unpriced(root: Path) -> None:
    """No machine has a price: the cost chart has nothing to draw."""
    store = Store(root)
    machines = {m: InventoryEntry(id=m, os="Linux") for m in ("gpu-box", "laptop", "pi5")}
    write_model(store.inventory_path, MachineInventory(machines=machines))
    store.public_specs("laptop").unlink()


@pytest.fixture(scope="module")
def store_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cmp") / "experiments" / "benchmark"
    write_store(root, extra_runs())
    _unpriced(root)
    return root


@pytest.fixture(scope="module")
def site(store_root: Path) -> Path:
    return build_site(load_public(Store(store_root)), store_root.parent.parent / "out")


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    with serve(site) as url:
        yield url + "compare.html"


def _cli_rows(root: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict]:
    capsys.readouterr()
    assert (
        main(["--store", str(root), "compare", "--by", "machine", *argv, "--format", "json"]) == 0
    )
    return json.loads(capsys.readouterr().out)["rows"]


def _key(row: dict[str, Any]) -> tuple[Any, ...]:
    return (row["model"], row["precision"], row.get("shape"), row["test"], row["metric"])


@pytest.mark.parametrize("match", ["best", "exact"])
def test_cli_and_site_print_the_same_numbers(
    store_root: Path, served, browser, capsys: pytest.CaptureFixture[str], match: str
) -> None:
    cli = _cli_rows(store_root, capsys, "--a", "pi5", "--b", "laptop", "--match", match)
    watched = Watched(browser)
    try:
        _open(watched, served + f"#by=machine&a=pi5&b=laptop&match={match}")
        # The rows the page computed in the browser from the two machines' summaries.
        page = watched.page.evaluate(
            """match => { const index = window.BENCHLAB_CMP_INDEX.index;
                 const values = index.axes.find(a => a.axis === 'machine').values;
                 return window.BENCHLAB_COMPARE.comparePair(index, 'machine', match,
                   window.BENCHLAB_CMP['machine-' + values.indexOf('pi5')],
                   window.BENCHLAB_CMP['machine-' + values.indexOf('laptop')]); }""",
            match,
        )
    finally:
        watched.close()
    ours = {_key(r): r for r in page["rows"]}
    assert len(ours) == len(page["rows"]) == len(cli)  # every row, no cap
    assert len(cli) > 100
    for row in cli:
        mine = ours[_key(row)]
        assert (mine["a"], mine["b"]) == (row["a"], row["b"])
        assert mine["speedup"] == pytest.approx(row["speedup"])
        assert mine["mark"] == row["mark"]


def test_plotly_only_where_a_chart_is_drawn(site: Path, tmp_path: Path) -> None:
    assert "plotly" not in (site / "compare.html").read_text(encoding="utf-8")
    root = tmp_path / "priced" / "experiments" / "benchmark"
    priced = build_site(load_public(write_store(root)), tmp_path / "out")
    html = (priced / "compare.html").read_text(encoding="utf-8")
    assert 'src="bl/plotly.js"' in html and 'data-chart="compare-cost"' in html


def _rows(watched: Watched) -> list[str]:
    return watched.page.locator("#bl-compare tbody tr").all_inner_texts()


def _open(watched: Watched, url: str) -> None:
    watched.open(url)
    watched.page.wait_for_selector(
        "#bl-compare tbody tr, [data-compare=empty], [data-compare=note]:not(:empty)",
        timeout=10_000,
    )


def test_cross_machine_rows_name_settings_and_carry_marks(served, browser, store_root, capsys):
    watched = Watched(browser)
    try:
        _open(watched, served + "#by=machine&a=pi5&b=laptop&model=SmolLM2-135M&precision=q8")
        assert watched.page.input_value("[data-compare=match]") == "best"
        assert "A = pi5, B = laptop, each at its best settings" in watched.page.inner_text(
            "[data-compare=note]"
        )
        row = watched.page.locator("#bl-compare tbody tr", has_text="tg16")
        settings = row.locator("td[data-key=settings]").inner_text()
        assert "A: 4 threads" in settings and "B: 8 threads" in settings
        marks = watched.page.locator("#bl-compare td[data-key=mark]").all_inner_texts()
        assert marks and set(marks) <= {"+", "-", "~", "?"}
        assert row.locator("td[data-key=mark]").inner_text() == "+"  # laptop decodes faster
        # the number the CLI prints for this comparison
        cli = _cli_rows(store_root, capsys, "--a", "pi5", "--b", "laptop", "--match", "best")
        [tg] = [r for r in cli if r["model"] == "SmolLM2-135M" and r["precision"] == "q8"
                and r["metric"] == "decode_tok_per_sec"]  # fmt: skip
        shown = row.locator("td[data-key=b] a").inner_text()
        assert shown == f"{tg['b']:,.2f}"
        assert not watched.errors and not watched.outside
    finally:
        watched.close()


def test_every_row_is_reachable_and_an_empty_filter_says_so(served, browser):
    watched = Watched(browser)
    try:
        _open(watched, served + "#by=machine&a=pi5&b=laptop&match=exact")
        count = watched.page.inner_text("[data-compare=count]")
        total = int(re.match(r"(\d+) rows", count).group(1))
        assert total > 100 and len(_rows(watched)) == 100
        assert "Page 1 of 2" in watched.page.inner_text("[data-compare=pager]")
        watched.page.click("[data-compare=pager] button:has-text('Next')")
        assert "page=2" in watched.page.url
        assert len(_rows(watched)) == total - 100
        # a filter acts on all rows, not the page shown
        watched.page.select_option("[data-compare=f-model]", "Tiny-25")
        assert "page=" not in watched.page.url and "model=Tiny-25" in watched.page.url
        assert all(text.startswith("Tiny-25") for text in _rows(watched))
        assert re.match(r"\d+ of \d+ rows", watched.page.inner_text("[data-compare=count]"))
        # nothing matches: said so, with the way back
        # (Tiny-25's peak / batch 1 is the same on both machines: within noise, not changed)
        watched.page.select_option("[data-compare=f-metric]", "speedup")
        assert len(_rows(watched)) == 1
        watched.page.check("[data-compare=f-changed]")
        assert "changed=1" in watched.page.url
        empty = watched.page.locator("[data-compare=empty]")
        assert "No row matches these filters" in empty.inner_text() and not _rows(watched)
        watched.page.uncheck("[data-compare=f-changed]")
        assert len(_rows(watched)) == 1
        assert not watched.errors and not watched.outside
    finally:
        watched.close()


def test_sort_lives_in_the_url_and_survives_a_reload(served, browser):
    watched = Watched(browser)

    def speedups() -> list[float]:
        texts = watched.page.locator("#bl-compare td[data-key=speedup]").all_inner_texts()
        return [float(t.rstrip("×").replace(",", "")) for t in texts if t != "–"]

    try:
        _open(watched, served + "#by=machine&a=pi5&b=laptop")
        watched.page.click("#bl-compare th[data-key=speedup]")
        assert "sort=speedup%3Adesc" in watched.page.url
        first = speedups()
        assert first == sorted(first, reverse=True)
        watched.page.reload()
        watched.page.wait_for_selector("#bl-compare tbody tr", timeout=10_000)
        head = watched.page.locator("#bl-compare th[data-key=speedup]")
        assert head.get_attribute("aria-sort") == "descending"
        assert speedups() == first
        assert watched.page.input_value("[data-compare=sort]") == "speedup:desc"
        assert not watched.errors
    finally:
        watched.close()


@pytest.mark.parametrize(("width", "height"), [(1440, 900), (390, 844)])
def test_no_plotly_and_no_sideways_scrolling(served, browser, width, height):
    watched = Watched(browser)
    requests: list[str] = []
    watched.page.on("request", lambda r: requests.append(r.url))
    try:
        watched.page.set_viewport_size({"width": width, "height": height})
        for fragment in ("#by=machine&a=pi5&b=laptop", "#by=machine&a=pi5&b=laptop&match=exact",
                         "#by=build"):  # fmt: skip
            _open(watched, served + fragment)
            watched.page.reload()  # a fragment change alone does not reload the page
            watched.page.wait_for_selector("#bl-compare tbody tr", timeout=10_000)
            page_width = watched.page.evaluate("document.documentElement.scrollWidth")
            assert page_width <= width, (fragment, page_width)
            if width >= 1440:
                # the whole table fits: Speedup is in view without scrolling the table
                box = watched.page.locator("#bl-compare .bl-cmp")
                assert box.evaluate("b => b.scrollWidth <= b.clientWidth"), fragment
                position = watched.page.locator("#bl-compare td[data-key=model]").first.evaluate(
                    "td => getComputedStyle(td).position"
                )
                assert position == "sticky"  # sorting never scrolls Model out of view
        assert not [url for url in requests if "plotly" in url]
        assert not watched.errors and not watched.outside
    finally:
        watched.close()
