"""The Python API for notebooks and scripts: the public catalog as rows.

    import benchlab
    catalog = benchlab.open_catalog("experiments/benchmark")
    df = catalog.to_pandas()                     # one row per run
    ok = df[df.status == "ok"]
    ok.groupby(["machine_id", "precision"]).decode_tok_per_sec.max()

The catalog is read by the one reader every `bench` verb uses
(`benchlab.catalog.read.load_catalog`), with its checks: a damaged file is one error naming
the file and the field, never a half-read frame. pandas is an optional extra
(`pip install 'benchlab[notebook]'`): the rest of benchlab does not need it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchlab.catalog.read import ENTRY_FIELDS, LoadedCatalog, load_catalog
from benchlab.errors import ConfigError
from benchlab.identity import IDENTITY_FIELDS
from benchlab.layout import Store, find_store

if TYPE_CHECKING:
    import pandas

NOTEBOOK_EXTRA = "notebook"

LEFT_OUT = frozenset({"batch_curve"})
"""Entry fields not made columns: the batch curve is a list of points per run (see
`Catalog.runs` for it), not a value a frame can hold well."""


class MissingExtra(ConfigError, ImportError):
    """An optional dependency of one call is not installed; the message says which extra
    installs it (an ImportError too, as notebooks expect of a missing package)."""


@dataclass(frozen=True)
class Catalog:
    """A checked public catalog: its runs (entry dicts as stored), machines and problems
    (shard lines the reader set aside, each named)."""

    loaded: LoadedCatalog

    @property
    def path(self) -> Path:
        return self.loaded.path

    @property
    def runs(self) -> list[dict[str, Any]]:
        return self.loaded.runs

    @property
    def machines(self) -> dict[str, Any]:
        return self.loaded.machines

    @property
    def problems(self) -> tuple[str, ...]:
        return self.loaded.problems

    def __len__(self) -> int:
        return len(self.loaded.runs)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.loaded.runs)

    def columns(self) -> list[str]:
        """The entry fields in the catalog's own order (identity, then metrics), every
        identity field (null where no run set it), then any field some run carries beyond
        them (resource metrics, newer fields), sorted."""
        known = [name for name in ENTRY_FIELDS if name not in LEFT_OUT]
        known += [name for name in IDENTITY_FIELDS if name not in ENTRY_FIELDS]
        seen = set(known) | LEFT_OUT
        extra = {key for run in self.loaded.runs for key in run if key not in seen}
        return known + sorted(extra)

    def to_pandas(self) -> pandas.DataFrame:
        """One row per run, one column per entry field (`columns`): identity fields, status,
        metrics (NaN where a run did not measure one); `timestamp` as UTC datetimes (NaT where
        a run's stamp is not a date-time)."""
        pd = _pandas()
        columns = self.columns()
        runs = self.loaded.runs
        data: dict[str, list[Any]] = {name: [run.get(name) for run in runs] for name in columns}
        data["status"] = [run.get("status", "ok") for run in runs]
        data["tags"] = [run.get("tags", []) for run in runs]
        frame: pandas.DataFrame = pd.DataFrame(data, columns=columns)
        # An undated run (any text the gate lets by: ARCHITECTURE.md, The catalog) is NaT.
        frame["timestamp"] = pd.to_datetime(frame["timestamp"], utc=True, errors="coerce")
        return frame


def _pandas() -> Any:
    try:
        import pandas
    except ImportError:
        raise MissingExtra(
            f"to_pandas() needs pandas: pip install 'benchlab[{NOTEBOOK_EXTRA}]'"
        ) from None
    return pandas


def open_catalog(path: str | os.PathLike[str] | None = None) -> Catalog:
    """The public catalog at `path`: a store dir (`experiments/benchmark`) or its
    catalog.json; by default the store `bench` would use here ($BENCHLAB_STORE, else
    `experiments/benchmark` in this or a parent directory)."""
    target = Path(path) if path is not None else find_store()
    catalog_path = Store(target).catalog_path if target.is_dir() else target
    return Catalog(load_catalog(catalog_path))
