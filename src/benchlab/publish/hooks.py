"""The MkDocs hook of the generated site: puts the pages' HTML tables in after Markdown.

A page's big tables (what changed, fastest machines, run histories) are HTML built with
escaping by `publish.site`. Handed to Python-Markdown inside the page, every tag of them goes
through its HTML block parser twice, which was 60 % of `mkdocs build` on a 10,000-run
catalog. So the page holds a marker (`<!--bl-slot N-->`) and the table waits in
`_slots/<page>.json` (excluded from the site by `exclude_docs`); this hook swaps it in once
the search plugin has indexed the page and before the theme renders it
(`on_page_context`, after the plugin's own): the search plugin's HTML parser over every
cell was a third of `mkdocs build` on a 1,000-run catalog, and the index held timestamps
and numbers no one searches for. Search finds a page by its title and text, and a series
by its id and label: after the build this hook adds the render's extra search entries (one
per series) to the index.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

SLOTS_DIR = "_slots"
_MARKER = re.compile(r"<!--bl-slot (\d+)-->")


def slots_path(docs_dir: str | Path, src_uri: str) -> Path:
    """Where the slots of the page `src_uri` (relative to docs_dir) are kept."""
    return Path(docs_dir) / SLOTS_DIR / f"{src_uri}.json"


def fill(html: str, slots: list[str]) -> str:
    """`html` with every marker replaced by its slot."""
    return _MARKER.sub(lambda m: slots[int(m.group(1))], html)


def on_page_context(context: Any, page: Any, config: Any, nav: Any) -> Any:
    """MkDocs event: the page's HTML body gets its slots filled, once the search plugin has
    indexed it (this hook's priority is below the plugin's) and before the theme renders."""
    path = slots_path(config["docs_dir"], page.file.src_uri)
    if path.is_file():
        page.content = fill(page.content, json.loads(path.read_text(encoding="utf-8")))
    return context


# What `mkdocs.plugins.event_priority(-100)` sets: after the search plugin (0) reads the page.
on_page_context.mkdocs_priority = -100  # type: ignore[attr-defined]


SEARCH_ENTRIES = f"{SLOTS_DIR}/search-entries.json"
"""Search entries of pages whose own text says little (one per series: its id and label),
written by the render (`pages.machines.series_entries`)."""


def on_post_build(config: Any) -> None:
    """MkDocs event: the search index gets the render's extra entries."""
    extra = Path(config["docs_dir"]) / SEARCH_ENTRIES
    index_path = Path(config["site_dir"]) / "search" / "search_index.json"
    if not extra.is_file() or not index_path.is_file():
        return
    index = json.loads(index_path.read_text(encoding="utf-8"))
    index["docs"] = [*index.get("docs", []), *json.loads(extra.read_text(encoding="utf-8"))]
    index_path.write_text(json.dumps(index, ensure_ascii=False, separators=(",", ":")), "utf-8")


# What `mkdocs.plugins.event_priority(-50)` sets (mkdocs is an optional dependency): after
# the search plugin writes its index (0), before the offline plugin inlines it (-100).
on_post_build.mkdocs_priority = -50  # type: ignore[attr-defined]
