"""A plug-in package installed for real: a dist-info with entry_points.txt and its module, on
a site dir the test puts on sys.path, as pip leaves one."""

from __future__ import annotations

from pathlib import Path


def install_plugin(site: Path, dist: str, group: str, entry: str, module: str, source: str) -> None:
    """Write distribution `dist` (version 0.1) into `site`: its entry point `entry` (`name =
    module:attribute`) in `group`, and `module`.py holding `source`."""
    info = site / f"{dist.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n{entry}\n")
    (site / f"{module}.py").write_text(source)
