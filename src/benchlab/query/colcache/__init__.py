"""The columnar query cache: `bench best` and `bench table` over a million runs in a second.

Why: at a million runs a v3 catalog is ~700 MB of JSON lines in a few hundred shards, and
loading it as entry dicts (`read.load_catalog`, even from its marshal cache) takes several
GB and many seconds. `best` and `table` look at a few fields of every run to pick their
winners, then print the winners in full. This cache keeps those few fields as numpy
columns, evaluates the filters on them, picks the winners, and reads back only the
winners' own lines.

What it holds (private and derived, in the store's runs/.cache/, never tracked):
- `catalog-columns.d/`: one segment per shard, reused while the shard keeps its (size,
  mtime_ns, inode). Per run: integer codes into the shard's small tables of distinct
  values (model and model_id, machine, precision and precision family, the date, tags,
  status, mode, threads, backend, the version triple, series, revision); a float64 column
  per metric (NaN where missing) and which of its values were JSON integers; its run id and
  timestamp; where its line is (byte offset, length). The revision and the integer flags
  serve the site (`publish.data.load_site`), which builds every run's light entry from them.
- `catalog-columns.bin`: the segments side by side, codes into one set of tables, one row
  per run id (a run in two shards settled by `order.winner`, retracted ids gone), in one
  file of a JSON header and raw arrays, memory-mapped: a query touches only the columns it
  reads. Run ids and timestamps stay in the segments; only tied rows need them.

It is valid while catalog.json and every shard keep (name, size, mtime_ns, inode), the key
`read.load_catalog`'s cache uses. Who refreshes it: the first reader that finds it stale
(`bench best`, `bench table`, the site's `publish.data.load_site`), never `bench catalog
build`. That reader rebuilds it: the changed shards are parsed (one at a time per process;
a cold build of a million runs uses a process per CPU) and the segments recombined (no
sort of every run: about a second at a million runs). `refresh` does the same on demand,
for a caller that wants the next query fast.

How a query runs: each filter is evaluated on the distinct values, `mask = ok[codes]`;
then per group (none, machine or series) one pass per metric keeps the rows at the group's
top (`np.maximum.at`), and the rows still tied are ordered by timestamp and run id, compared
as the strings Python compares. The winners' lines are read back as entries, and the verbs
sort them with their own code.

Exactness: a filter is evaluated by `filters.select` itself, on one small stand-in entry
per distinct value of the columns it reads, so there is still one definition of what
`--model` or `--build` means. Where the cache cannot promise the Python answer (a metric
integer beyond 2**53, a NUL in an id or timestamp, a filter it does not know, a catalog
that fails a check) it answers None or raises `Unanswerable`, and the caller takes the
Python path, which also reports any fault. Runs without a recorded thread count join their
series on the columns as where the catalog loads (`join`, `Columns.as_loaded`).

Why numpy and not DuckDB or Arrow: numpy is already a dependency, and the work is a few
gathers and `np.maximum.at` over a million small integers: 20-40 ms in-process at a million
runs (best, best --by series, table). DuckDB 1.1.3 over the same columns in a .duckdb file
(measured with tools/perf/query.py's catalog) answers `best` as fast, but the table query
(best per series by three metrics in turn, then timestamp and id: a window function) took
~1 s and 400 MB in a fresh process; and it would add a native dependency (a 20 MB wheel,
61 MB installed), a second spelling of the filters in SQL, and a load step that needs
pandas or pyarrow. Arrow brings the same dependency weight for what numpy's arrays already
hold.

Parts, imported in one direction (this module, then `build`, `answer`, `join`, `combine`,
`arrays`, `key`; none of them imports the verbs, nor this module): `key` (names, the key,
`Unanswerable`), `arrays` (the container format, one shard's segment), `combine` (the
segments side by side, one row per run), `answer` (`Columns`: filters and winners), `join`
(runs without a thread count joined to their series), `build` (open the cache, or rebuild
what is stale).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchlab.layout import Store
from benchlab.query.colcache.key import (
    CACHE_NAME,
    FORMAT,
    SEGMENT_DIR,
    Unanswerable,
    catalog_key,
)

if TYPE_CHECKING:
    from benchlab.query.colcache.answer import Columns

__all__ = [
    "CACHE_NAME",
    "FORMAT",
    "MIN_BYTES",
    "MODE_ENV",
    "SEGMENT_DIR",
    "Columns",
    "Unanswerable",
    "open_columns",
    "refresh",
]

MODE_ENV = "BENCHLAB_QUERY_COLUMNS"
"""`auto` (default): the cache answers catalogs of `MIN_BYTES` or more; `always`; `never`."""
MIN_BYTES = 16_000_000
"""Below ~20,000 runs the Python path answers as fast (tools/perf/query.py), and a small
store keeps no second cache (nor pays numpy's import: the parts that use numpy are imported
past this gate only)."""


def __getattr__(name: str) -> Any:
    """`Columns` on first use: importing the package must not import numpy (see MIN_BYTES)."""
    if name == "Columns":
        # lazy: numpy, imported past the MIN_BYTES gate only
        from benchlab.query.colcache.answer import Columns

        return Columns
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def open_columns(where: Store | Path, *, min_bytes: int | None = -1) -> Columns | None:
    """The columns of the catalog, current (rebuilt here if stale), or None where the
    Python path should answer: a catalog under `min_bytes` (default: per $BENCHLAB_QUERY_COLUMNS
    and MIN_BYTES), a missing or faulty catalog, or one the cache cannot answer exactly."""
    if min_bytes == -1:
        min_bytes = _threshold()
    if min_bytes is None:
        return None
    catalog_path, cache_dir = _paths(where)
    try:
        key, shards, total = catalog_key(catalog_path)
    except OSError:
        return None
    if total < min_bytes:
        return None
    # lazy: numpy, imported past the MIN_BYTES gate only
    from benchlab.query.colcache.build import open_current

    return open_current(catalog_path, cache_dir, key, shards)


def refresh(where: Store | Path, *, force: bool = False) -> bool:
    """Bring the columns cache up to date now, so the next query is fast (no command calls
    it: the first query that finds the cache stale rebuilds it). Only catalogs big enough
    for the cache to answer are cached unless `force`; unchanged shards are not read again.
    True when the cache is current and answers."""
    return open_columns(where, min_bytes=0 if force else MIN_BYTES) is not None


def _paths(where: Store | Path) -> tuple[Path, Path]:
    """(catalog.json, cache dir) of a store, a store root or a catalog.json path."""
    if isinstance(where, Path) and where.suffix == ".json":
        store = Store(where.parent)
    else:
        store = where if isinstance(where, Store) else Store(where)
    return store.catalog_path, store.query_cache.parent


def _threshold() -> int | None:
    mode = os.environ.get(MODE_ENV, "auto").strip().lower()
    if mode == "never":
        return None
    return 0 if mode == "always" else MIN_BYTES
