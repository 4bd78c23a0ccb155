"""Pages rendered in worker processes: a large site's series pages and run files, and
whole pages rendered beside the others (`beside`)."""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from benchlab.detect.segment import SMALL
from benchlab.publish.context import Shared, SiteContext
from benchlab.publish.links import Links
from benchlab.runtime.pool import context, cpus, inherits, pool_map

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
        _merge(site, files, linked)


def _merge(site: SiteContext, files: dict[str, str], linked: dict[str, set[str]]) -> None:
    """A worker's files and run links into the site."""
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


SitePage = Callable[[SiteContext], Any]
"""A whole page (or section of pages): `fn(site)` writes its files into the site."""

SitePart = Callable[[SiteContext, int, int], None]
"""Work after the pages that splits by series: `fn(site, part, parts)` renders the series
`part_of` gives to `part` into the site."""


def part_of(sid: str, parts: int) -> int:
    """Which of `parts` processes renders a series' files: the same in every process and
    for every kind of file, so each process's run files need only the run links its own
    series files made (and the pages')."""
    return zlib.crc32(sid.encode()) % parts


BESIDE_RUNS = 500
"""From this many ok runs `beside` renders pages in a forked process too: below, the fork
and the pickling of their files back cost more than the second CPU gives."""


@dataclass
class After:
    """The work after the pages, split between the two processes of `beside`: `then` needs
    only the pages' shared work; `last` needs the run links of every page as well."""

    then: SitePart
    last: SitePart


_BESIDE_INPUT: tuple[SiteContext, Sequence[SitePage], Any, After | None] | None = None
"""The site, the pages, the shared next-page counter and the work after the pages of the
forked process (inherited, never pickled)."""


@dataclass(frozen=True)
class Partner:
    """What `beside` hands back: each page function's result, in order, and `finish`, which
    merges the forked process's part of the work after the pages into the site."""

    results: list[Any]
    finish: Callable[[], None]


@contextmanager
def beside(
    site: SiteContext, pages: Sequence[SitePage], after: After | None = None
) -> Iterator[Partner]:
    """Render `pages` in this process and one forked from it, each taking the next page
    that neither has taken; the files and run links the forked process made are merged into
    the site. Which page costs most depends on the fleet (the machine pages at 1,000 runs,
    the compare page at a million), so the pages are not assigned in advance: list the
    costly ones first.

    Every page reads the detector's steps and the current levels of the same history
    windows, so before the pages each process does half of that work (`SiteContext.share`:
    the detector's pass where the site has not had it, and the level windows) and the two
    swap halves (`SiteContext.complete`): each series is read once, on either CPU.

    `after`: the forked process does part 1 of 2 of the work after the pages, `then` as
    soon as its pages are done and `last` once it has every page's run links, while this
    process hands its pages on (MkDocs starts building them) and does part 0 of both
    itself. `Partner.finish` waits for part 1 and merges it; leaving the block ends the
    forked process whatever happened.

    A page reads the site's runs, lookups and caches and writes only its files and run
    links, so the files are the ones this process alone would render
    (tests/site/test_lean.py holds the two equal). Where fork is missing, there is one
    CPU, or the site is small (`BESIDE_RUNS`), the pages and both parts render here, in
    order."""
    if site.ok_runs < BESIDE_RUNS or cpus() < 2 or not inherits():
        if not site.detected:
            site.detect()
        results = [fn(site) for fn in pages]

        def finish_here() -> None:
            if after is not None:
                after.then(site, 1, 2)
                after.last(site, 1, 2)

        yield Partner(results, finish_here)
        return
    if not site.detected and site.workers > 1:
        site.detect()  # its own worker processes already use every CPU
    if site.ok_runs > SMALL:
        # Both processes segment histories past SMALL runs with numpy (detect.segment imports
        # it where used): imported once here, before the fork, the child inherits it rather
        # than paying its 0.13 s import again (numpy.ma too: `np.median` imports it on its
        # first call).
        import numpy.ma  # noqa: F401
    ctx = context()
    taken = ctx.Value("i", 0)
    global _BESIDE_INPUT
    _BESIDE_INPUT = (site, pages, taken, after)
    try:
        pool = ctx.Pool(1)  # forks here: the process sees the site as it is now
    finally:
        _BESIDE_INPUT = None
    try:
        theirs = pool.apply_async(_beside_share)
        pending = pool.apply_async(_beside_pages, (site.share(0, 2),))
        then = pool.apply_async(_beside_then) if after is not None else None
        site.complete(theirs.get())
        mine = _take_pages(site, pages, taken)
        files, linked, rendered = pending.get()
        _merge(site, files, linked)
        mine.update(rendered)
        # A copy: the pool pickles it in its own thread while this one adds links.
        page_links = {sid: set(run_ids) for sid, run_ids in site.links.linked.items()}
        last = pool.apply_async(_beside_last, (page_links,)) if after is not None else None
        pool.close()

        def finish() -> None:
            if then is not None and last is not None:
                _merge(site, *then.get())
                _merge(site, last.get(), {})

        yield Partner([mine[index] for index in range(len(pages))], finish)
    finally:
        pool.terminate()
        pool.join()


def _take_pages(site: SiteContext, pages: Sequence[SitePage], taken: Any) -> dict[int, Any]:
    """Render the next page no process has taken, until none is left: {index: result}."""
    results: dict[int, Any] = {}
    while True:
        with taken.get_lock():
            index = taken.value
            taken.value += 1
        if index >= len(pages):
            return results
        results[index] = pages[index](site)


def _beside_share() -> Shared:
    """In the forked process: the second half of the shared work (`SiteContext.share`)."""
    assert _BESIDE_INPUT is not None
    site = _BESIDE_INPUT[0]
    return site.share(1, 2)


def _beside_pages(
    theirs: Shared,
) -> tuple[dict[str, str], dict[str, set[str]], dict[int, Any]]:
    """In the forked process: take the first process's half of the shared work, then render
    pages from a clean slate of files and links."""
    assert _BESIDE_INPUT is not None
    site, pages, taken, _ = _BESIDE_INPUT
    site.complete(theirs)
    site.files = {}
    site.links = Links()
    results = _take_pages(site, pages, taken)
    return site.files, site.links.linked, results


def _beside_then() -> tuple[dict[str, str], dict[str, set[str]]]:
    """In the forked process, once its pages are done: its part of `After.then`, from a
    clean slate of files and links (the links stay, for `_beside_last`)."""
    assert _BESIDE_INPUT is not None
    site, _, _, after = _BESIDE_INPUT
    assert after is not None
    site.files = {}
    site.links = Links()
    after.then(site, 1, 2)
    return site.files, site.links.linked


def _beside_last(page_links: dict[str, set[str]]) -> dict[str, str]:
    """In the forked process: its part of `After.last`, with the run links of every page
    beside those its own part of `then` made."""
    assert _BESIDE_INPUT is not None
    site, _, _, after = _BESIDE_INPUT
    assert after is not None
    site.files = {}
    for sid, run_ids in page_links.items():
        site.links.linked.setdefault(sid, set()).update(run_ids)
    after.last(site, 1, 2)
    return site.files
