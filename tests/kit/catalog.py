"""A built catalog as one document, whatever its format, for tests that look at entries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from benchlab.catalog.read import load_catalog


def catalog_doc(path: Path) -> dict[str, Any]:
    """catalog.json's head with `runs` (every entry), `machines` and `last_updated` as the
    one reader gives them.

    A v3 catalog keeps its entries in shards next to the head; `load_catalog` reads them
    (and checks every one), so a test sees what `bench` sees, in run id order.
    """
    head = orjson.loads(Path(path).read_bytes())
    loaded = load_catalog(Path(path))
    runs = sorted(loaded.runs, key=lambda e: e["run_id"])
    return {**head, "machines": loaded.machines, "last_updated": loaded.last_updated, "runs": runs}
