"""benchlab: benchmark sweeps across a fleet of unlike machines, kept honest.

`benchlab.open_catalog(path)` reads a public catalog for notebooks (`benchlab.query.api`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["__version__", "open_catalog"]

if TYPE_CHECKING:
    from benchlab.query.api import open_catalog


def __getattr__(name: str) -> Any:
    """`open_catalog` on first use: `import benchlab` stays cheap for the CLI and the agent
    bundle, which never read a catalog this way."""
    if name == "open_catalog":
        # lazy: the front door goes up to query; `import benchlab` stays cheap
        from benchlab.query.api import open_catalog

        return open_catalog
    raise AttributeError(f"module 'benchlab' has no attribute {name!r}")
