"""`bench site build`: the rendered pages into a docs dir, then `mkdocs build --strict`."""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
from collections.abc import Callable
from contextlib import nullcontext
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from benchlab.errors import ConfigError, StoreError
from benchlab.files import SMALL_CAP, check_output, ensure_dir, read_bytes, read_text
from benchlab.publish import hooks, template_cache
from benchlab.publish.data import PublicData
from benchlab.publish.hooks import SLOTS_DIR, fill
from benchlab.publish.mkdocs_run import MkdocsProcess
from benchlab.publish.site import Rendered, render_pages
from benchlab.publish.static import SITE_ASSETS, copy_assets
from benchlab.publish.templating import templates_cache
from benchlab.redact.policy import store_policy


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
    write_files(rendered, docs, source)
    return rendered


def write_files(rendered: Rendered, docs: Path, source: Path) -> None:
    """Write rendered pages (with hand-written pages and assets) into a fresh docs dir."""
    _check_names(rendered.files)
    check_output(docs)  # a link there: refused, never emptied nor written through
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
            (docs / rel).write_bytes(read_bytes(path))  # a link there is refused, not copied
    _write_tree(rendered.files, docs)
    copy_assets(docs / "bl", SITE_ASSETS, durable=False)


def _check_names(files: dict[str, str]) -> None:
    for rel in files:  # before anything is removed or written
        if Path(rel).is_absolute() or ".." in Path(rel).parts:
            raise StoreError(f"{rel!a}: a page name outside the site; nothing written")


def _write_tree(files: dict[str, str], root: Path) -> None:
    """Write files by relative path, each folder made once (thousands of data files)."""
    made: set[Path] = set()
    for rel, text in sorted(files.items()):
        path = root / rel
        if path.parent not in made:
            path.parent.mkdir(parents=True, exist_ok=True)
            made.add(path.parent)
        path.write_text(text, encoding="utf-8")


def _merge_into(src: Path, dst: Path) -> None:
    """Move the tree `src` into `dst`: a folder `dst` lacks moves whole (one rename)."""
    for item in sorted(src.iterdir()):
        target = dst / item.name
        if item.is_dir() and target.is_dir():
            _merge_into(item, target)
        else:
            if target.is_dir():
                shutil.rmtree(target)
            shutil.move(str(item), str(target))


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
        base = yaml.safe_load(read_text(base_path, cap=SMALL_CAP)) or {}
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
    config["hooks"] = [
        *config.get("hooks", []),
        str(Path(hooks.__file__).resolve()),
        str(Path(template_cache.__file__).resolve()),  # compiled theme templates kept
    ]
    excluded = str(config.get("exclude_docs") or "")
    config["exclude_docs"] = f"{excluded}\n/{SLOTS_DIR}/\n".lstrip("\n")
    return config


def _page_title(path: Path) -> str:
    for line in read_text(path, cap=SMALL_CAP).splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return path.stem.replace("-", " ").capitalize()


def build_site(
    data: PublicData,
    output: Path,
    source: Path | None = None,
    docs: Path | None = None,
    run_build: bool = True,
    runner: MkdocsProcess | None = None,
) -> Path:
    """Render the pages and (unless run_build is False) build the site into `output`.

    Returns the generated docs dir when only rendering, else the output dir. MkDocs builds
    the pages while the series and run data files are rendered (`render_pages`'
    `pages_done`); those files and the chart and compare scripts never pass through MkDocs:
    they are written beside the output and moved into it once MkDocs is done. `runner`: an
    MkDocs process the caller started earlier still (`bench site build` starts it before
    importing the site's code).
    """
    # The published store's redaction policy, not the working directory's (ARCHITECTURE.md,
    # Publishing and redaction).
    scope = store_policy(data.store_root) if data.store_root is not None else nullcontext()
    with scope:
        source = source or default_source(data.store_root or Path.cwd())
        if not (source / "mkdocs.yml").is_file():
            raise ConfigError(f"{source / 'mkdocs.yml'}: file not found (pass --source DIR)")
        if not run_build:
            target = docs or source / "docs" / "generated"
            write_docs(data, target, source)
            return target
        # A link at site/build (or above it, inside the repository) is refused before anything
        # is removed or written (ARCHITECTURE.md, One reader and one writer path).
        root = check_output(output)
        ensure_dir(output.parent, root)
        with (
            tempfile.TemporaryDirectory(prefix="benchlab-site-") as tmp,
            tempfile.TemporaryDirectory(prefix=".benchlab-data-", dir=output.parent) as staged,
            tempfile.TemporaryDirectory(prefix=".benchlab-old-", dir=output.parent) as old,
        ):
            work = Path(tmp)
            target = docs or work / "docs"
            cache = templates_cache(data.store_root)
            runner = runner or MkdocsProcess()
            # The last build's site is moved aside (one rename) and removed by a thread, on
            # the CPU that waits while MkDocs starts, not in the render's path.
            removing: list[threading.Thread] = []
            try:

                def pages_done(pages: Rendered) -> None:
                    read = {rel: text for rel, text in pages.files.items() if _mkdocs_reads(rel)}
                    write_files(Rendered(read, pages.nav), target, source)
                    if output.exists():
                        aside = Path(old) / "site"
                        output.rename(aside)
                        remove = threading.Thread(target=shutil.rmtree, args=(aside, True))
                        remove.start()
                        removing.append(remove)
                    config = mkdocs_config(source, target, output, pages.nav)
                    runner.build(config, work, _epoch(data.catalog.last_updated), cache)

                rendered = render_pages(data, pages_done=pages_done)
                late = {rel: text for rel, text in rendered.files.items()
                        if not (target / rel).is_file()}  # fmt: skip
                _check_names(late)
                _write_tree(late, Path(staged))
                runner.wait()
            finally:
                runner.stop()
                for thread in removing:
                    thread.join()
            _merge_into(Path(staged), output)
        return output


def _mkdocs_reads(rel: str) -> bool:
    """Whether MkDocs needs a rendered file: the pages and their slots. Chart and compare
    scripts only need copying: they go to the output with the data files, and MkDocs lists
    and copies some hundreds fewer."""
    return rel.endswith(".md") or rel.startswith(f"{SLOTS_DIR}/")


def tree_digest(root: Path, hasher: Callable[[], Any] | None = None) -> str:
    """One hash over every file's relative path and bytes: two equal builds, equal digests."""
    import hashlib

    digest = (hasher or hashlib.sha256)()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(read_bytes(path))
        digest.update(b"\0")
    return digest.hexdigest()
