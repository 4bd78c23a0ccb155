"""The static files every chart page, dashboard and site ships beside its HTML.

One copier for all three, so a page never loads a script its folder lacks and plotly.js
always comes from the installed plotly package (never a CDN: the site works offline).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from benchlab.errors import StoreError
from benchlab.files import check_output, ensure_dir, read_bytes, read_optional
from benchlab.layout import atomic_write_bytes

CHART_ASSETS = ("plotly.min.js", "benchlab.js", "benchlab.css")
"""What a standalone chart page or the dashboard loads."""

SITE_ASSETS = (
    "plotly.js",
    "plotly-basic.LICENSE",
    "benchlab.js",
    "compare.js",
    "series.js",
    "benchlab.css",
    "iframe-worker.js",
    "iframe-worker.LICENSE",
)
"""What the MkDocs site loads from bl/ (the iframe worker makes search work from file://;
series.js draws the one series page from a series' data file).

The site's plotly is the *basic* partial bundle (scatter, bar, pie: every chart the site
draws), 1.2 MB minified, shipped gzip-compressed inside `plotly.js` (~0.5 MB) and inflated
by the browser's own DecompressionStream: the 1.5 MB page budget could not hold it plus
MkDocs Material's scripts and styles otherwise, and a page on file:// or on a server that
does not compress still downloads only the small file. Only pages with charts load it."""

PLOTLY_BASIC = "plotly-basic.min.js"
"""plotly.js 4.1.1's basic bundle (npm `plotly.js-basic-dist-min`, MIT), the version the
plotly Python package ships, vendored under assets/ beside its licence."""

_LOADER = """/* plotly.js basic v4.1.1 (MIT, see plotly-basic.LICENSE), gzip + base64; inflated with
   DecompressionStream and run once. window.BENCHLAB_PLOTLY resolves to Plotly. */
(function () {
  "use strict";
  var packed = "%s";
  window.BENCHLAB_PLOTLY = (async function () {
    var text = atob(packed), bytes = new Uint8Array(text.length);
    for (var i = 0; i < text.length; i++) { bytes[i] = text.charCodeAt(i); }
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    var source = await new Response(stream).text();
    (0, eval)(source);
    return window.Plotly;
  })();
})();
"""


def plotly_loader() -> bytes:
    """`plotly.js`: the basic bundle gzip-compressed (mtime 0, so byte-identical every
    build) and base64-encoded in a script that inflates it."""
    import base64
    import gzip

    raw = read_bytes(Path(__file__).parent / "assets" / PLOTLY_BASIC)
    packed = base64.b64encode(gzip.compress(raw, compresslevel=9, mtime=0)).decode("ascii")
    return (_LOADER % packed).encode("utf-8")


def plotly_js_path() -> Path:
    """plotly.min.js as the installed plotly package ships it."""
    import plotly  # type: ignore[import-untyped]  # plotly ships no type information

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
    folder: Path,
    names: Sequence[str] = CHART_ASSETS,
    *,
    durable: bool = True,
    root: Path | None = None,
) -> list[Path]:
    """Copy `names` into `folder`, atomically, skipping files already identical (a chart
    directory rewritten with the same charts keeps its mtimes). `durable=False` skips the
    fsyncs, for the site's docs dir that every build replaces whole anyway. `root`: no
    link between it and a file written (`files.prepare_write`)."""
    root = root if root is not None else check_output(folder)
    ensure_dir(folder, root)
    written = []
    for name in names:
        data = plotly_loader() if name == "plotly.js" else read_bytes(asset_path(name))
        target = folder / name
        if read_optional(target, root=root) != data:
            atomic_write_bytes(target, data, durable=durable, root=root)
        written.append(target)
    return written
