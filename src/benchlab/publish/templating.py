"""Jinja2 for the site's Markdown pages, and the small scripts pages load data from.

Jinja2 runs with autoescape on, and every user string that lands in Markdown also has its
Markdown punctuation escaped (`md` filter), so a model named `<script>alert(1)</script>` is
text. Chart data and run details go to scripts (`window.BENCHLAB_*`) with `<`, `>` and `&`
escaped, so no value can close a script early."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemBytecodeCache, PackageLoader, StrictUndefined
from markupsafe import Markup

from benchlab.layout import Store, cache_readable
from benchlab.publish.charts import Chart, chart_json
from benchlab.publish.jsontext import dumps

# Python-Markdown's backslash-escapable characters, plus | for tables (< > & are entities).
_MD_PUNCT = re.compile(r"([\\`*_{}\[\]()#+\-.!|])")


def md_escape(value: Any) -> Markup:
    """A user string made inert for Markdown: punctuation backslashed, then HTML-escaped."""
    text = "" if value is None else str(value)
    text = " ".join(text.split())  # a newline would end a table row
    return Markup(html.escape(_MD_PUNCT.sub(r"\\\1", text), quote=True))


def yaml_title(value: Any) -> Markup:
    """A front-matter title: MkDocs puts titles into pages unescaped, so escape here."""
    return Markup(json.dumps(html.escape(str(value), quote=True)))


def templates_cache(store_root: Path | None) -> Path | None:
    """Where a store keeps compiled site templates, the pages' and the MkDocs theme's:
    `runs/.cache/site-templates/` (None without a store, and where a link lies between the
    store root and it: compiled templates are code, never read nor written through a
    committed link; ARCHITECTURE.md, One reader and one writer path)."""
    if not store_root:
        return None
    cache = Store(store_root).runs_dir / ".cache" / "site-templates"
    return cache if cache_readable(cache, Path(store_root)) else None


def environment(cache: Path | None = None) -> Environment:
    """The pages' Jinja environment; with `cache` (the store's `runs/.cache/site-templates/`,
    ARCHITECTURE.md, Caches) the compiled templates are kept there, as the MkDocs theme's
    are (`publish.template_cache`): compiling them was a tenth of a second of every build.
    Jinja keys each by its name, file and a checksum of its source, so an edited template
    is compiled afresh; an unwritable folder only costs the compile."""
    env = Environment(
        loader=PackageLoader("benchlab.publish", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=False,
    )
    env.filters["md"] = md_escape
    env.filters["yaml_title"] = yaml_title
    if cache is not None:
        try:
            cache.mkdir(parents=True, exist_ok=True)
        except OSError:
            return env
        env.bytecode_cache = FileSystemBytecodeCache(str(cache))
    return env


def chart_script(chart: Chart) -> str:
    """`bl/charts/<slug>.js`: a chart's data as a script, so the page and its search index
    hold words, not numbers."""
    return (
        "(window.BENCHLAB_CHARTS=window.BENCHLAB_CHARTS||{})"
        f"[{json.dumps(chart.slug)}]={chart_json(chart)};\n"
    )


def json_script(name: str, key: str, payload: Any) -> str:
    text = dumps(payload, sort_keys=True)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return f"(window.{name}=window.{name}||{{}})[{json.dumps(key)}]={text};\n"
