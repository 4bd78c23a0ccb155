"""The git merge driver that makes two clones' catalogs merge without a conflict.

git runs `bench catalog merge-driver %O %A %B %P` for the files `.gitattributes` names; the
driver writes the union of both sides into %A. A malformed side exits non-zero, so git
reports a conflict instead of a silently wrong catalog.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchlab.catalog.document import parse_catalog
from benchlab.catalog.format import CATALOG_V3, OLD, refuse_old
from benchlab.catalog.gate import MAX_CATALOG_BYTES, MAX_SHARD_BYTES
from benchlab.catalog.merge import (
    INVENTORY_SCHEMA,
    check_conflicts,
    check_lines,
    merge_heads,
    merge_inventories,
)
from benchlab.catalog.shards import SHARD_DIR, SHARD_SUFFIX, merge_shard_bytes
from benchlab.catalog.text import render
from benchlab.errors import SchemaError, StoreError
from benchlab.files import read_bytes, read_optional_text
from benchlab.layout import Store, atomic_write_bytes, atomic_write_text, loads_json, parse_model
from benchlab.models import MachineInventory

MERGE_DRIVER = "benchlab-catalog"


def _read_side(path: Path, label: str) -> dict[str, Any]:
    raw = read_bytes(path, cap=MAX_CATALOG_BYTES, name=label)
    data = loads_json(raw, label)
    if not isinstance(data, dict):
        raise SchemaError(f"{label}: $: expected a JSON object")
    return data


def merge_files(base: Path, ours: Path, theirs: Path, name: str | None = None) -> str:
    """Union-merge two versions of catalog.json (or machines/catalog.json) into `ours`.

    The base is not needed: the union of both sides already holds everything the base held
    (entries are never deleted; a withdrawn run is listed in `retracted`, which is a union
    too). A v1 or v2 side (a clone that has not run `bench catalog upgrade`) is refused, so
    git reports a conflict. A v3 shard (`%P` ends in .jsonl) is merged as a
    union of lines. Returns the kind of document merged.
    """
    label = name or str(ours)
    if label.endswith(SHARD_SUFFIX):
        return _merge_shard(ours, theirs, label)
    sides = []
    for path, side in ((ours, "ours"), (theirs, "theirs")):
        sides.append(_read_side(path, f"{label} ({side})"))
    for data, side in zip(sides, ("ours", "theirs"), strict=True):
        if data.get("$schema") in OLD:  # exits non-zero: git reports a conflict
            refuse_old(f"{label} ({side})", data)
    kinds = {side.get("$schema") for side in sides}
    if kinds == {CATALOG_V3}:
        for data, side in zip(sides, ("ours", "theirs"), strict=True):
            _check_catalog(f"{label} ({side})", data)
        atomic_write_text(ours, render(merge_heads(*sides)))
        return CATALOG_V3
    if kinds != {INVENTORY_SCHEMA}:
        raise SchemaError(
            f"{label}: $.$schema: cannot merge {sorted(map(str, kinds))}; expected both sides "
            f"to be {CATALOG_V3!r} or {INVENTORY_SCHEMA!r}"
        )

    for data, side in zip(sides, ("ours", "theirs"), strict=True):
        parse_model(f"{label} ({side})", MachineInventory, data)
    atomic_write_text(ours, render(merge_inventories(*sides)))
    return INVENTORY_SCHEMA


def _check_catalog(label: str, data: dict[str, Any]) -> None:
    """One side of catalog.json: its entries, and its conflict lines (`conflicts`)."""
    parse_catalog(label, data)
    check_conflicts(label, data)


def _merge_shard(ours: Path, theirs: Path, label: str) -> str:
    """A v3 shard: `shards.merge_shard_bytes` of both sides, each checked as catalog entries
    first. Copies of one run that measure differently stay side by side in a conflict line
    (`order.settle`) for `bench catalog validate` to report. Retracted ids are not known here
    (they live in catalog.json, merged on its own): every reader drops them, and the next
    build removes them from the shard. An empty side (a shard whose runs were all retracted)
    is a shard with no lines."""
    raws = []
    for path, side in ((ours, "ours"), (theirs, "theirs")):
        raws.append(read_bytes(path, cap=MAX_SHARD_BYTES, name=f"{label} ({side})"))
    merged = merge_shard_bytes(*raws, where=label, labels=("ours", "theirs"), check=check_lines)
    # `ours` is git's own temp file (%A), named by git and made by it just now in the work
    # tree's top, never a committed path: replaced by rename, which follows no link
    # (ARCHITECTURE.md, One reader and one writer path).
    atomic_write_bytes(ours, merged)
    return "shard"


def default_driver_command() -> str:
    """This interpreter running benchlab: works even where `bench` is not on git's PATH."""
    return f"{shlex.quote(sys.executable)} -m benchlab"


def _git(repo: Path, *args: str) -> str:
    try:
        done = subprocess.run(
            ["git", *args], cwd=repo, capture_output=True, text=True, check=True, timeout=60
        )
    except FileNotFoundError:
        raise StoreError("git: not found on PATH") from None
    except subprocess.CalledProcessError as exc:
        message = (exc.stderr or "").strip().splitlines()
        raise StoreError(f"git {' '.join(args)}: {message[-1] if message else exc}") from None
    return done.stdout.strip()


def install_merge_driver(store: Store, command: str | None = None) -> list[str]:
    """Wire the union merge into this clone: `.gitattributes` lines and `.git/config`.

    Returns the .gitattributes lines written. Both are idempotent.
    """
    start = store.root if store.root.is_dir() else Path.cwd()
    top = Path(_git(start, "rev-parse", "--show-toplevel"))
    root = store.root.resolve()
    try:
        rel_root = root.relative_to(top.resolve())
    except ValueError:
        raise StoreError(f"{store.root}: the store is not inside the git repo {top}") from None
    targets = [
        (rel_root / "catalog.json").as_posix(),
        (rel_root / "machines" / "catalog.json").as_posix(),
        (rel_root / SHARD_DIR / "**" / f"*{SHARD_SUFFIX}").as_posix(),
    ]
    wanted = [f"{target} merge={MERGE_DRIVER}" for target in targets]
    attributes = top / ".gitattributes"
    old = read_optional_text(attributes, cap=1024 * 1024)
    lines = old.splitlines() if old is not None else []
    kept = [line for line in lines if not line.split() or line.split()[0] not in targets]
    text = "\n".join([*kept, *wanted]) + "\n"
    if old != text:
        atomic_write_text(attributes, text, root=top)  # never through a committed link
    driver = f"{command or default_driver_command()} catalog merge-driver %O %A %B %P"
    _git(top, "config", f"merge.{MERGE_DRIVER}.name", "benchlab catalog union merge")
    _git(top, "config", f"merge.{MERGE_DRIVER}.driver", driver)
    return wanted
