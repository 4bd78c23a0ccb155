"""Older catalog formats, read as the current one (asv's `update_to_N`, in one step).

A clone that has not pulled this version still writes `benchmark/catalog.v1`, and the git
merge driver may meet one on either side; every reader upgrades on load, and the next build
writes v2. Nothing is dropped: a v1 entry keeps every field it had and gains the derived
ones (`series`, `precision_family`), computed from what it carries.

Format history:
- v1: entries with machine, model, precision, backend, mode, status, tags and metrics.
- v2: the full measurement identity per entry, `series`, `tests`, attempts, warnings,
  samples, stddevs; `retracted` run ids.
- v3: the same entries, one line each in `catalog/<machine>/<ISO week>.<machine>.jsonl` shards;
  catalog.json keeps only the machines' static fields, `retracted` and the layout (see
  `catalog.shards`). A v3 catalog.json may also hold `runs`: entries a git merge brought in
  from a v2 side, which every reader includes and the next build moves into shards.
"""

from __future__ import annotations

from typing import Any

from benchlab.identity import precision_family, series_id

CATALOG_V1 = "benchmark/catalog.v1"
CATALOG_V2 = "benchmark/catalog.v2"
CATALOG_V3 = "benchmark/catalog.v3"
CATALOG_SCHEMA = CATALOG_V2
"""The single-file catalog's schema (`BENCHLAB_CATALOG_FORMAT=v2`); builds write v3 by
default (see build.catalog_format)."""
KNOWN = (CATALOG_V1, CATALOG_V2, CATALOG_V3)


def upgrade_entry(entry: dict[str, Any]) -> dict[str, Any]:
    """A v1 entry with the v2 fields it can have (a v2 entry is returned unchanged)."""
    if "series" in entry or not isinstance(entry, dict):
        return entry
    out = dict(entry)
    precision = out.get("precision")
    if isinstance(precision, str):
        out["precision_family"] = precision_family(precision)
    out["series"] = series_id(out)
    return out


def upgrade(doc: Any) -> Any:
    """The document as v2; anything that is not a known catalog is returned untouched for
    the validator to name what is wrong with it."""
    if not isinstance(doc, dict) or doc.get("$schema", CATALOG_V1) != CATALOG_V1:
        return doc
    runs = doc.get("runs", [])
    out = dict(doc)
    out["$schema"] = CATALOG_V2
    out["version"] = "2.0"
    if isinstance(runs, list):
        out["runs"] = [upgrade_entry(e) if isinstance(e, dict) else e for e in runs]
    return out
