"""The columnar query cache kept current: opened while its key holds, else rebuilt from
the shards whose segments are stale and the head (see `query.colcache`)."""

from __future__ import annotations

import gc
import logging
from pathlib import Path
from typing import Any

from benchlab.catalog.marks import head_marks
from benchlab.catalog.order import REJECTED
from benchlab.catalog.read import check_entries, read_head
from benchlab.errors import BenchlabError
from benchlab.query.colcache.answer import Columns
from benchlab.query.colcache.arrays import (
    Container,
    Segment,
    inline_segment,
    shard_segments,
    write_container,
)
from benchlab.query.colcache.combine import combine_segments
from benchlab.query.colcache.key import CACHE_NAME, Unanswerable

logger = logging.getLogger(__name__)


def open_current(
    catalog_path: Path, cache_dir: Path, key: list[Any], shards: list[tuple[str, int, int, int]]
) -> Columns | None:
    """The cache in `cache_dir` if its key is `key`, else rebuilt; None where it does not
    answer (a catalog that fails a check, or one it cannot answer exactly)."""
    columns = _open_saved(catalog_path, cache_dir / CACHE_NAME, key)
    if columns is None:
        # As in read.load_catalog: parsed entries hold no cycles, and collecting the
        # millions of objects a big catalog makes costs more than reading it.
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            columns = _build(catalog_path, cache_dir, key, shards)
        except (BenchlabError, OSError, ValueError, Unanswerable):
            logger.debug("columns cache not built for %s", catalog_path, exc_info=True)
            return None
        finally:
            if was_enabled:
                gc.enable()
    return columns if columns.exact else None


def _open_saved(catalog_path: Path, path: Path, key: list[Any]) -> Columns | None:
    try:
        box = Container(path)
    except (OSError, ValueError):
        return None
    if box.header.get("key") != key:
        return None
    try:
        return Columns(catalog_path.parent, path.parent, box.header, box.array, keep=box)
    except (KeyError, TypeError, ValueError):  # another layout: rebuilt
        return None


def _build(
    catalog_path: Path, cache_dir: Path, key: list[Any], shards: list[tuple[str, int, int, int]]
) -> Columns:
    """Read what changed (every shard whose segment is stale, the head) and recombine."""
    # Only a v3 head passes (an old catalog is refused, and the Python path then says so in
    # one line naming `bench catalog upgrade`); any fault: the Python path.
    doc = read_head(catalog_path)
    retracted = doc.get("retracted", [])
    pending = doc.get("runs", [])
    if doc.get("conflicts"):
        raise Unanswerable("catalog.json holds conflict lines (the next build shards them)")
    check_entries(catalog_path, pending)
    segments: list[Segment] = shard_segments(catalog_path.parent, cache_dir, shards)
    segments.append(inline_segment(pending))
    marks = head_marks(doc)  # outlier marks: the head's key covers them
    header, arrays = combine_segments(
        catalog_path.parent, segments, retracted, doc.get(REJECTED, []), marks
    )
    header["key"] = key
    try:
        write_container(cache_dir / CACHE_NAME, header, arrays)
    except OSError:
        logger.debug("columns cache %s not written", cache_dir, exc_info=True)
    return Columns(catalog_path.parent, cache_dir, header, arrays.__getitem__, segments=segments)
