"""Site pages rendered from the public catalog: escaping, holes, links, determinism."""

from __future__ import annotations

import html
import re

import markdown
from hypothesis import given, settings
from hypothesis import strategies as st
from site_factory import XSS_MODEL

from benchlab.cli import main
from benchlab.layout import Store
from benchlab.publish.data import load_public
from benchlab.publish.site import md_escape, render_pages


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
    for path, text in files.items():
        if not path.endswith(".md"):
            continue
        base = path.rsplit("/", 1)[0] + "/" if "/" in path else ""
        for target in re.findall(r"\]\(([^)#]+\.md)\)", text):
            resolved = re.sub(r"[^/]+/\.\./", "", base + target)
            assert resolved in files, f"{path} links {target}"


def test_regressions_page_lists_the_step(public_store):
    text = render_pages(load_public(Store(public_store))).files["regressions.md"]
    assert "[laptop](machines/laptop.md)" in text and "Llama" in text
    assert "−" in text  # a drop in percent


def test_rendering_is_deterministic(public_store):
    first = render_pages(load_public(Store(public_store))).files
    second = render_pages(load_public(Store(public_store))).files
    assert first == second


def test_no_mkdocs_writes_only_markdown_and_assets(public_store, tmp_path, capsys):
    docs = tmp_path / "docs"
    argv = ["--store", str(public_store), "site", "build", "--no-mkdocs", "--docs", str(docs)]
    assert main(argv) == 0
    assert (docs / "index.md").is_file() and (docs / "about.md").is_file()
    assert (docs / "bl" / "plotly.min.js").stat().st_size > 1_000_000
    assert sorted(p.name for p in (docs / "machines").iterdir()) == [
        "gpu-box.md",
        "laptop.md",
        "pi5.md",
    ]


def test_runs_differing_only_in_threads_are_two_rows_on_the_site(threads_store):
    files = render_pages(load_public(Store(threads_store))).files
    model_page = files["models/smollm2-135m.md"]
    rows = [
        line
        for line in model_page.splitlines()
        if line.startswith("| [gpu\\-box]") and "| q8 |" in line
    ]
    assert len(rows) == 2
    assert {row.split("|")[3].strip() for row in rows} == {"1", "4"}  # the Threads column
    assert all("benchlab 0\\.1\\.0" in row for row in rows)  # the version, md-escaped
    trend = files["bl/charts/model-smollm2-135m-trend.js"]
    assert "reference t1 p32/n16" in trend and "reference t4 p32/n16" in trend


def test_regressions_page_shows_the_version_before_and_after(public_store):
    text = render_pages(load_public(Store(public_store))).files["regressions.md"]
    [row] = [line for line in text.splitlines() if line.startswith("| ") and "laptop" in line]
    assert "benchlab 0\\.1\\.0" in row and "**benchlab 0\\.2\\.0**" in row
    assert "| 4 |" in row  # threads
