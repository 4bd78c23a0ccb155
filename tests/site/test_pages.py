"""Site pages rendered from the public catalog: escaping, holes, links, determinism."""

from __future__ import annotations

import html
import json
import os
import re
from dataclasses import replace

import markdown
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from site_factory import XSS_MODEL

from benchlab.cli import main
from benchlab.layout import Store
from benchlab.publish.build import expand
from benchlab.publish.data import load_public
from benchlab.publish.site import render_pages
from benchlab.publish.templating import md_escape


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), max_size=40))
def test_md_escape_renders_any_string_as_its_own_text(text):
    rendered = markdown.markdown(f"| a |\n|---|\n| {md_escape(text)} |", extensions=["tables"])
    cell = re.search(r"<td>(.*)</td>", rendered, re.S)
    shown = html.unescape(cell.group(1) if cell else "")
    assert "<" not in (cell.group(1) if cell else "")
    assert shown == " ".join(text.split())


def test_pages_escape_the_xss_model_everywhere(public_store):
    rendered = render_pages(load_public(Store(public_store)))
    for path, text in rendered.files.items():
        assert XSS_MODEL not in text, path
    model_page = rendered.files["models/xss-probe.md"]
    assert "# &lt;script&gt;alert\\(1\\)&lt;/script&gt;" in model_page
    assert 'title: "&lt;script&gt;alert(1)&lt;/script&gt;"' in model_page


def test_health_counts_holes_apart_from_failures(public_store):
    text = render_pages(load_public(Store(public_store))).files["health.md"]
    row = next(line for line in text.splitlines() if line.startswith("| [pi5]"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1:5] == ["38", "36", "1", "1"]  # runs, ok, failed, holes
    assert "measurement 1" in cells[5]


def test_every_generated_link_points_at_a_generated_page(public_store):
    files = render_pages(load_public(Store(public_store))).files
    for path in files:
        if not path.endswith(".md"):
            continue
        text = expand(files, path)
        base = path.rsplit("/", 1)[0] + "/" if "/" in path else ""
        targets = re.findall(r"\]\(([^)#]+\.md)\)", text)
        targets += [t[:-5] + ".md" for t in re.findall(r'href="([^"#?]+\.html)', text)]
        for target in targets:
            resolved = re.sub(r"[^/]+/\.\./", "", base + target)
            assert resolved in files, f"{path} links {target}"
        for series, run_id in re.findall(
            r'href="[./]*run\.html\?s=(s[0-9a-f]+)&amp;r=([^"]+)"', text
        ):
            data = files[f"bl/runs/{series}.js"]
            assert json.dumps(run_id) in data, f"{path} links run {run_id} without its details"


_CELL = re.compile(r"<td[^>]*>(.*?)</td>")


def _rows(text: str, table_id: str) -> list[list[str]]:
    """The cells (as text) of an HTML table of a rendered page."""
    body = re.search(rf'<table[^>]*id="{table_id}".*?<tbody>(.*?)</tbody>', text, re.S)
    assert body, table_id
    return [
        [
            html.unescape(re.sub(r"<[^>]+>", "", c)).strip()
            for c in re.findall(r"<td[^>]*>(.*?)</td>", row)
        ]
        for row in re.findall(r"<tr>(.*?)</tr>", body.group(1))
    ]


def test_regressions_page_lists_the_step(public_store):
    text = expand(render_pages(load_public(Store(public_store))).files, "regressions.md")
    assert "laptop llama-3.2-1b q8 reference t4 p32/n16" in text
    assert re.search(r'data-label="Change"[^>]*>-5\d\.\d % <', text)  # the halving, in percent


def test_rendering_is_deterministic(public_store):
    first = render_pages(load_public(Store(public_store))).files
    second = render_pages(load_public(Store(public_store))).files
    assert first == second


def test_no_mkdocs_writes_only_markdown_and_assets(public_store, tmp_path, capsys):
    docs = tmp_path / "docs"
    argv = ["--store", str(public_store), "site", "build", "--no-mkdocs", "--docs", str(docs)]
    assert main(argv) == 0
    assert (docs / "index.md").is_file() and (docs / "about.md").is_file()
    loader = (docs / "bl" / "plotly.js").read_bytes()
    assert 300_000 < len(loader) < 700_000  # the basic bundle, compressed
    assert not (docs / "bl" / "plotly.min.js").exists()
    assert sorted(p.name for p in (docs / "machines").iterdir()) == [
        "gpu-box.md",
        "laptop.md",
        "pi5.md",
    ]


def test_runs_differing_only_in_threads_are_two_rows_on_the_site(threads_store):
    files = render_pages(load_public(Store(threads_store))).files
    machine_page = expand(files, "machines/gpu-box.md")
    labels = [row[0] for row in _rows_any(machine_page)]
    assert "SmolLM2-135M q8 reference t1 p32/n16" in labels
    assert "SmolLM2-135M q8 reference t4 p32/n16" in labels
    trend = files["bl/charts/model-smollm2-135m-trend.js"]
    assert "reference t1 p32/n16" in trend and "reference t4 p32/n16" in trend


def _rows_any(text: str) -> list[list[str]]:
    body = re.search(r"<tbody>(.*?)</tbody>", text, re.S)
    assert body
    return [
        [
            html.unescape(re.sub(r"<[^>]+>", "", c)).strip()
            for c in re.findall(r"<td[^>]*>(.*?)</td>", row)
        ]
        for row in re.findall(r"<tr>(.*?)</tr>", body.group(1))
    ]


def test_regressions_page_shows_the_version_before_and_after(public_store):
    text = expand(render_pages(load_public(Store(public_store))).files, "regressions.md")
    rows = [line for line in text.splitlines() if line.startswith("<tr>") and "laptop" in line]
    [row] = [line for line in rows if "peak aggregate" in line]  # one row per metric
    assert "benchlab 0.1.0 → <strong>benchlab 0.2.0</strong>" in row


def test_home_lists_the_fastest_first_then_what_changed_with_the_planted_step(fleet_store):
    text = expand(render_pages(load_public(Store(fleet_store))).files, "index.md")
    body = text.split("# What changed", 1)[1]
    assert body.index('id="fastest"') < body.index('id="open-regressions"')
    assert body.index('id="open-regressions"') < body.index('id="what-changed"')
    rows = _rows(text, "what-changed")
    assert rows and all("pi5" in row[2] and " q4 " in row[2] for row in rows)
    assert {row[0] for row in rows} == {"regression"}
    assert all(-32 < float(row[1].split()[0]) < -24 for row in rows)  # the planted -28 %
    assert "benchlab 0.1.0" in rows[0][4]


def test_a_recent_step_with_few_runs_after_is_a_suspect(fleet_store, tmp_path):
    """Cut the fleet two days after the step: one run after it per series is not enough to
    confirm, so the home page says suspect rather than nothing."""
    from benchlab.publish.data import PublicData

    data = load_public(Store(fleet_store))
    cut = [r for r in data.runs if r["timestamp"] < "2025-02-26"]
    files = render_pages(PublicData(replace(data.catalog, runs=cut))).files
    rows = _rows(expand(files, "index.md"), "what-changed")
    pi5 = [row for row in rows if "pi5" in row[2]]
    assert pi5 and all(row[0] == "suspect regression" for row in pi5)
    assert all(row[8] == "1" for row in pi5)  # runs after
    assert "more series on this machine agree" in pi5[0][7]


def test_an_empty_catalog_says_no_runs_yet_not_all_clear(tmp_path):
    from site_factory import write_empty

    store = write_empty(tmp_path / "experiments" / "benchmark")
    files = render_pages(load_public(store)).files
    assert "No runs yet" in files["index.md"] and "No step" not in files["index.md"]
    assert "No runs yet" in files["regressions.md"]
    assert "No step found" not in files["regressions.md"]


def test_fastest_machine_table_is_sorted_fastest_first_at_the_cli_best_level(fleet_store, bench):
    """One meaning of best: each machine's row is the level `bench best --by machine`
    prints (the newest segment's mean and its ±), not its newest run."""
    files = render_pages(load_public(Store(fleet_store))).files
    rows = _rows(expand(files, "models/llama-3.2-1b.md"), "fastest-q8")
    peaks = [float(row[1].split(" ± ")[0].replace(",", "")) for row in rows]
    assert peaks == sorted(peaks, reverse=True) and rows[0][0] == "gpu-box"
    code, out, _ = bench(
        "--store", str(fleet_store), "best", "--model", "llama-3.2-1b", "--precision", "q8",
        "--by", "machine", "--format", "json",
    )  # fmt: skip
    assert code == 0
    answers = json.loads(out)
    cli = {a["machine_id"]: a for a in (answers if isinstance(answers, list) else [answers])}
    assert sorted(cli) == sorted(row[0] for row in rows)
    for row in rows:
        value, pm = row[1].split(" ± ")
        level = cli[row[0]]["level"]
        assert float(value.replace(",", "")) == pytest.approx(level["value"], abs=0.05), row
        assert float(pm) == pytest.approx(level["pm95"], abs=0.05), row
        assert float(value) != cli[row[0]]["peak_tok_per_sec"]  # not the newest run's value


def test_a_machine_without_a_batched_peak_ranks_by_decode_and_says_not_measured(store):
    """A llama-bench run measures no batched peak: its machine stays on the model page,
    after the machines ranked by peak, with its peak "not measured" (never blank or 0)."""
    from site_factory import entry, write_entries

    runs = [entry("laptop", "Llama-3.2-1B", "q8", day, 10.0 + day % 2) for day in range(4)]
    no_peak = {"peak_tok_per_sec": None, "baseline_tok_per_sec": None, "speedup": None}
    runs += [
        entry("gpu-box", "Llama-3.2-1B", "q8", day, 50.0, backend="llama-bench", **no_peak)
        for day in range(4)
    ]
    files = render_pages(load_public(write_entries(store, runs))).files
    rows = _rows(expand(files, "models/llama-3.2-1b.md"), "fastest-q8")
    assert [row[0] for row in rows] == ["laptop", "gpu-box"]
    assert rows[1][1] == "not measured" and rows[1][2].startswith("50.0")


def test_one_series_page_and_a_data_file_per_series(public_store):
    """MkDocs builds a handful of pages at any size: one series page and one run page draw
    every series and run from data files, and the series index lists each series."""
    from benchlab.identity import series_of

    data = load_public(Store(public_store))
    files = render_pages(data).files
    pages = sorted(p for p in files if p.endswith(".md"))
    machines = [p for p in pages if p.startswith("machines/")]
    models = [p for p in pages if p.startswith("models/")]
    rest = sorted(set(pages) - set(machines) - set(models))
    assert rest == ["compare.md", "health.md", "index.md", "regressions.md", "run.md", "series.md"]
    with_data = {series_of(r) for r in data.runs if r.get("status", "ok") == "ok"}
    assert {p[len("bl/series/") : -3] for p in files if re.match(r"bl/series/s\w+\.js$", p)} == (
        with_data
    )
    index = json.loads(files["bl/series/index.json"])["series"]
    assert {row["id"] for row in index} == with_data
    assert all(row["url"] == f"series.html?s={row['id']}" and row["label"] for row in index)


def test_series_addresses_come_from_checked_ids_only():
    import pytest

    from benchlab.errors import StoreError
    from benchlab.publish.links import series_url

    assert series_url("s0123456789ab", "../") == "../series.html?s=s0123456789ab"
    for bad in ("../../x", "s0123456789ab&r=1", "S0123456789AB", 7):
        with pytest.raises(StoreError, match="not a series id"):
            series_url(bad)


def test_a_failed_mkdocs_build_names_its_config_and_leaves_no_data_behind(public_store, tmp_path):
    """Fault injected: a theme MkDocs cannot load. The early-started MkDocs process fails,
    the build raises naming the config, and the staged data files are gone."""
    import pytest

    from benchlab.errors import StoreError
    from benchlab.publish.build import build_site

    source = tmp_path / "source"
    source.mkdir()
    (source / "mkdocs.yml").write_text("site_name: x\ntheme:\n  name: no-such-theme\n")
    out = tmp_path / "out"
    with pytest.raises(StoreError, match=r"mkdocs\.yml: mkdocs build --strict failed: "):
        build_site(load_public(Store(public_store)), out, source=source)
    assert not list(tmp_path.glob(".benchlab-data-*"))


def test_theme_templates_compiled_once_are_kept_and_change_nothing(public_store, tmp_path):
    """The MkDocs hook keeps the theme's compiled templates in runs/.cache/site-templates/;
    a build that reads them is byte-identical to one that compiled them."""
    from benchlab.publish.build import build_site, tree_digest

    cache = public_store / "runs" / ".cache" / "site-templates"
    assert not cache.exists()
    cold = build_site(load_public(Store(public_store)), tmp_path / "cold")
    kept = sorted(p.name for p in cache.iterdir())
    assert len(kept) > 10
    warm = build_site(load_public(Store(public_store)), tmp_path / "warm")
    assert sorted(p.name for p in cache.iterdir()) == kept  # read, not compiled again
    assert tree_digest(warm) == tree_digest(cold)


def test_the_runner_builds_what_stock_mkdocs_builds(public_store, tmp_path):
    """The MkDocs runner's Jinja loader skips dot folders when MkDocs lists the theme's
    files (publish/mkdocs_run.py): the built tree is byte for byte `mkdocs build`'s own."""
    import subprocess
    import sys

    import yaml

    from benchlab.publish.build import default_source, mkdocs_config, tree_digest, write_files
    from benchlab.publish.mkdocs_run import run_mkdocs

    source, docs = default_source(public_store), tmp_path / "docs"
    rendered = render_pages(load_public(Store(public_store)))
    write_files(rendered, docs, source)
    nav = rendered.nav
    ours, stock = tmp_path / "ours", tmp_path / "stock"
    run_mkdocs(mkdocs_config(source, docs, ours, nav), tmp_path, 0)
    config = tmp_path / "stock.yml"
    config.write_text(yaml.safe_dump(mkdocs_config(source, docs, stock, nav)))
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "SOURCE_DATE_EPOCH": "0"}
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-f",
                    str(config)], check=True, env=env, timeout=300)  # fmt: skip
    assert any((ours / "assets" / "javascripts").glob("*.js"))  # the theme's files are there
    assert tree_digest(ours) == tree_digest(stock)
