"""The built site's search index: page words and series entries, not the tables' cells.

The tables go into a page after MkDocs' search plugin has read it (`publish.hooks`), so the
plugin's HTML parser does not walk every cell (a third of `mkdocs build` at 1,000 runs). The
built pages still hold every table, and search still finds machines, models and series.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from benchlab.layout import Store
from benchlab.publish.build import build_site
from benchlab.publish.data import load_public
from benchlab.publish.hooks import SLOTS_DIR
from benchlab.publish.site import render_pages


def _index(site: Path) -> list[dict[str, str]]:
    return json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))["docs"]


def _headers(html: str) -> list[str]:
    """Each table's column titles run together, as the search plugin would index them."""
    tables = re.findall(r"<thead>(.*?)</thead>", html, re.S)
    return ["".join(re.sub(r"<[^>]+>", "", th).strip() for th in re.findall(
        r"<th[^>]*>(.*?)</th>", table, re.S)) for table in tables]  # fmt: skip


def test_tables_are_on_the_pages_but_not_in_the_search_index(fleet_store, tmp_path):
    data = load_public(Store(fleet_store))
    slots = {path: json.loads(text) for path, text in render_pages(data).files.items()
             if path.startswith(f"{SLOTS_DIR}/") and path.endswith(".md.json")}  # fmt: skip
    site = build_site(data, tmp_path / "site")
    texts = " ".join(doc.get("text", "") for doc in _index(site))
    checked = 0
    for path, tables in sorted(slots.items()):
        page = site / (path[len(SLOTS_DIR) + 1 : -len(".md.json")] + ".html")
        built = page.read_text(encoding="utf-8")
        assert "<!--bl-slot" not in built  # every slot filled
        for table in tables:
            assert table in built
            for header in _headers(table):
                checked += 1
                assert header not in texts, page
    assert checked >= 5
    locations = [doc["location"] for doc in _index(site)]
    assert any(loc.startswith("machines/pi5.html") for loc in locations)  # the page, by title
    assert any(loc.startswith("models/") for loc in locations)
    assert any(loc.startswith("series.html?s=") for loc in locations)  # the hook's entries
