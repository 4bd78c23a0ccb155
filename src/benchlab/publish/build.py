"""`bench site build`: the rendered pages into a docs dir, then `mkdocs build --strict`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from benchlab.errors import ConfigError, StoreError
from benchlab.publish import hooks
from benchlab.publish.data import PublicData
from benchlab.publish.hooks import SLOTS_DIR, fill
from benchlab.publish.site import Rendered, render_pages
from benchlab.publish.static import SITE_ASSETS, copy_assets


def default_source(store_root: Path) -> Path:
    """The site/ folder of the repository the store belongs to, never of wherever benchlab
    was installed: two clones sharing one virtualenv each build their own site."""
    root = store_root.resolve()
    for candidate in (root, *root.parents):
        if (candidate / "site" / "mkdocs.yml").is_file():
            return candidate / "site"
    return Path.cwd() / "site"


def expand(files: dict[str, str], path: str) -> str:
    """A rendered page with its slots filled in (what the built page's body holds): for
    tests and for reading `render_pages` output without MkDocs."""
    slots = files.get(f"{SLOTS_DIR}/{path}.json")
    return fill(files[path], json.loads(slots)) if slots else files[path]


def write_docs(data: PublicData, docs: Path, source: Path) -> Rendered:
    """Render the generated docs dir: hand-written pages from source/docs, then generated
    pages, then assets. The dir is replaced whole so no stale page survives."""
    rendered = render_pages(data)
    for rel in rendered.files:  # before anything is removed or written
        if Path(rel).is_absolute() or ".." in Path(rel).parts:
            raise StoreError(f"{rel!a}: a page name outside the site; nothing written")
    if docs.exists():
        shutil.rmtree(docs)
    docs.mkdir(parents=True)
    hand = source / "docs"
    if hand.is_dir():
        for path in sorted(hand.rglob("*")):
            rel = path.relative_to(hand)
            if rel.parts[0] == "generated" or not path.is_file():
                continue
            (docs / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, docs / rel)
    for rel, text in sorted(rendered.files.items()):
        path = docs / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    copy_assets(docs / "bl", SITE_ASSETS, durable=False)
    return rendered


def _epoch(stamp: str | None) -> int:
    """SOURCE_DATE_EPOCH from the catalog's last_updated: MkDocs stamps sitemaps with it."""
    if not stamp:
        return 0
    try:
        moment = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    except ValueError:
        return 0
    return int(moment.timestamp())


def mkdocs_config(source: Path, docs: Path, output: Path, nav: list[Any]) -> dict[str, Any]:
    base_path = source / "mkdocs.yml"
    try:
        base = yaml.safe_load(base_path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{base_path}: cannot read the MkDocs config: {exc}") from None
    config = dict(base)
    config["docs_dir"] = str(docs.resolve())
    config["site_dir"] = str(output.resolve())
    theme = dict(config.get("theme") or {})
    if theme.get("custom_dir"):
        theme["custom_dir"] = str((source / theme["custom_dir"]).resolve())
    config["theme"] = theme
    hand_pages = sorted(
        p.relative_to(source / "docs").as_posix()
        for p in (source / "docs").glob("*.md")
        if (source / "docs").is_dir()
    )
    extra_nav = [{_page_title(source / "docs" / p): p} for p in hand_pages]
    config["nav"] = nav + extra_nav
    # The pages' tables wait in _slots/ and the hook puts them in (publish/hooks.py).
    config["hooks"] = [*config.get("hooks", []), str(Path(hooks.__file__).resolve())]
    excluded = str(config.get("exclude_docs") or "")
    config["exclude_docs"] = f"{excluded}\n/{SLOTS_DIR}/\n".lstrip("\n")
    return config


def _page_title(path: Path) -> str:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return path.stem.replace("-", " ").capitalize()


def run_mkdocs(config: dict[str, Any], work: Path, epoch: int) -> None:
    config_path = work / "mkdocs.yml"
    config_path.write_text(yaml.safe_dump(config, sort_keys=True), encoding="utf-8")
    env = {
        **os.environ,
        "NO_MKDOCS_2_WARNING": "1",
        "SOURCE_DATE_EPOCH": str(epoch),
        "PYTHONHASHSEED": "0",
    }
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-f", str(config_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    if proc.returncode != 0:
        lines = [ln for ln in (proc.stderr + proc.stdout).splitlines() if ln.strip()]
        reason = lines[-1] if lines else f"exit {proc.returncode}"
        raise StoreError(f"{config_path}: mkdocs build --strict failed: {reason}")


def build_site(
    data: PublicData,
    output: Path,
    source: Path | None = None,
    docs: Path | None = None,
    run_build: bool = True,
) -> Path:
    """Render the pages and (unless run_build is False) build the site into `output`.

    Returns the generated docs dir when only rendering, else the output dir.
    """
    source = source or default_source(data.store_root or Path.cwd())
    if not (source / "mkdocs.yml").is_file():
        raise ConfigError(f"{source / 'mkdocs.yml'}: file not found (pass --source DIR)")
    if not run_build:
        target = docs or source / "docs" / "generated"
        write_docs(data, target, source)
        return target
    with tempfile.TemporaryDirectory(prefix="benchlab-site-") as tmp:
        work = Path(tmp)
        target = docs or work / "docs"
        rendered = write_docs(data, target, source)
        config = mkdocs_config(source, target, output, rendered.nav)
        if output.exists():
            shutil.rmtree(output)
        run_mkdocs(config, work, _epoch(data.catalog.last_updated))
    return output


def tree_digest(root: Path, hasher: Callable[[], Any] | None = None) -> str:
    """One hash over every file's relative path and bytes: two equal builds, equal digests."""
    import hashlib

    digest = (hasher or hashlib.sha256)()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()
