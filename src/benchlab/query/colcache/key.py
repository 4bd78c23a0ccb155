"""The columnar query cache's names, its key, and the one exception its parts raise: the
leaf of `query.colcache`, which every other part imports and which imports none of them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from benchlab.catalog.read import METRICS, cache_key, shards_key
from benchlab.query.filters import TABLE_METRICS

CACHE_NAME = "catalog-columns.bin"
SEGMENT_DIR = "catalog-columns.d"
FORMAT = "benchlab-columns/3 " + ",".join(METRICS) + " table:" + ",".join(TABLE_METRICS)
"""Part of the key: another metric list or table ranking misses the cache."""


class Unanswerable(Exception):
    """The cache cannot promise the Python verbs' answer: take the Python path."""


def catalog_key(catalog_path: Path) -> tuple[list[Any], list[tuple[str, int, int, int]], int]:
    """(cache key, shard stats, total bytes) of the catalog as it is on disk now: the key
    `read.load_catalog`'s cache uses (catalog.json's and every shard's name, size,
    mtime_ns and inode) with this cache's FORMAT, as JSON would give it back."""
    stat = catalog_path.stat()
    shards = list(shards_key(catalog_path))
    key = orjson.loads(orjson.dumps([FORMAT, *cache_key(stat), *shards]))
    return key, shards, stat.st_size + sum(size for _, size, _, _ in shards)
