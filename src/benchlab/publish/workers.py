"""Pages rendered in worker processes: a large site's series pages and run files."""

from __future__ import annotations

from collections.abc import Callable

from benchlab.pool import inherits, pool_map
from benchlab.publish.context import SiteContext
from benchlab.publish.links import Links

PageFn = Callable[[SiteContext, str], None]
"""A page of one series: `fn(site, sid)` writes its files into the site."""


def in_workers(site: SiteContext, fn: PageFn, sids: list[str]) -> None:
    """Call `fn(site, sid)` for each series, in forked worker processes where the site is
    large (`site.workers`): each returns the files it rendered and the runs it linked,
    merged here. Pages do not depend on one another, so the files are the same. The
    site (templates, lookups) is not pickled for spawned workers: without fork the
    pages render here (`pool.pool_map`, picklable=False)."""
    if site.workers <= 1 or len(sids) < 2 or not inherits():
        for sid in sids:
            fn(site, sid)
        return
    global _SITE_INPUT
    _SITE_INPUT = (site, fn)
    chunks = [sids[i :: site.workers * 4] for i in range(site.workers * 4)]
    try:
        results = pool_map(_site_chunk, [c for c in chunks if c], site.workers, picklable=False)
    finally:
        _SITE_INPUT = None
    for files, linked in results:
        site.files.update(files)
        for sid, run_ids in linked.items():
            site.links.linked.setdefault(sid, set()).update(run_ids)


_SITE_INPUT: tuple[SiteContext, PageFn] | None = None
"""The site and page the forked page workers run (inherited, never pickled)."""


def _site_chunk(sids: list[str]) -> tuple[dict[str, str], dict[str, set[str]]]:
    """In a worker: render these series' files from a clean slate; return them and the
    runs they linked."""
    assert _SITE_INPUT is not None
    site, fn = _SITE_INPUT
    site.files = {}
    site.links = Links()
    for sid in sids:
        fn(site, sid)
    return site.files, site.links.linked
