"""The pages' compiled Jinja templates are kept in the store's `runs/.cache/site-templates/`
beside the MkDocs theme's (`publish.templating.environment`): a second render compiles
nothing and writes the same pages; an unwritable cache only costs the compile."""

from __future__ import annotations

from jinja2 import Environment

from benchlab.layout import Store
from benchlab.publish.data import load_public
from benchlab.publish.site import render_pages
from benchlab.publish.templating import templates_cache


def test_a_second_render_compiles_no_template_and_writes_the_same_pages(public_store, monkeypatch):
    cache = templates_cache(public_store)
    assert cache is not None and not cache.exists()
    cold = render_pages(load_public(Store(public_store))).files
    kept = sorted(p.name for p in cache.iterdir())
    assert len(kept) >= 5  # the pages and the macros they import

    def no_compile(*args: object, **kwargs: object) -> None:
        raise AssertionError("a kept template was compiled again")

    monkeypatch.setattr(Environment, "compile", no_compile)
    warm = render_pages(load_public(Store(public_store))).files
    assert warm == cold
    assert sorted(p.name for p in cache.iterdir()) == kept


def test_an_unwritable_cache_renders_the_same_pages(public_store):
    cache = templates_cache(public_store)
    assert cache is not None
    cold = render_pages(load_public(Store(public_store))).files
    for path in cache.iterdir():
        path.unlink()
    cache.rmdir()
    cache.write_text("a file where the folder should be\n", encoding="utf-8")
    assert render_pages(load_public(Store(public_store))).files == cold
