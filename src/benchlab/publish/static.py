"""The static files every chart page, dashboard and site ships beside its HTML.

One copier for all three, so a page never loads a script its folder lacks and plotly.js
always comes from the installed plotly package (never a CDN: the site works offline).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from benchlab.errors import StoreError
from benchlab.layout import atomic_write_bytes

CHART_ASSETS = ("plotly.min.js", "benchlab.js", "benchlab.css")
"""What a standalone chart page or the dashboard loads."""

SITE_ASSETS = (*CHART_ASSETS, "iframe-worker.js", "iframe-worker.LICENSE")
"""What the MkDocs site loads from bl/ (the iframe worker makes search work from file://)."""


def plotly_js_path() -> Path:
    """plotly.min.js as the installed plotly package ships it."""
    import plotly

    path = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    if not path.is_file():
        raise StoreError(f"{path}: plotly.min.js missing from the plotly package")
    return path


def asset_path(name: str) -> Path:
    """A file of benchlab's own assets (benchlab.js, benchlab.css ...), or plotly.min.js."""
    if name == "plotly.min.js":
        return plotly_js_path()
    return Path(__file__).parent / "assets" / name


def copy_assets(
    folder: Path, names: Sequence[str] = CHART_ASSETS, *, durable: bool = True
) -> list[Path]:
    """Copy `names` into `folder`, atomically, skipping files already identical (a chart
    directory rewritten with the same charts keeps its mtimes). `durable=False` skips the
    fsyncs, for the site's docs dir that every build replaces whole anyway."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name in names:
        data = asset_path(name).read_bytes()
        target = folder / name
        if not target.is_file() or target.read_bytes() != data:
            atomic_write_bytes(target, data, durable=durable)
        written.append(target)
    return written
