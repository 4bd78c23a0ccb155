"""Another clone's edit of a line of a run this clone holds (ARCHITECTURE.md, The catalog):
a run dir is the truth about its run, so the incremental build reads the dir again when a
pull changed the shard its line sits in, puts back what the dir gives (as `--full` would)
and names the edit it replaced. No run is lost, no edit kept silently."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import orjson

from benchlab.catalog import build as catalog_build
from benchlab.catalog.format import decode_entry
from benchlab.catalog.shards import encode_line, iter_shards
from benchlab.layout import Store


def test_a_pulled_edit_of_this_clones_run_is_rebuilt_from_its_run_dir_and_named(
    store: Path, make_fleet: Callable[..., list[str]]
) -> None:
    make_fleet(store, 6, seed=5, step_s=3600)
    catalog_build.build(Store(store))
    name, path, at = next(
        (name, path, i)
        for name, path in iter_shards(store / "catalog.json")
        for i, line in enumerate(path.read_bytes().splitlines())
        if b'"decode_tok_per_sec"' in line
    )
    before = path.read_bytes()
    lines = before.splitlines()
    entry = decode_entry(orjson.loads(lines[at]))
    entry["decode_tok_per_sec"] = entry["decode_tok_per_sec"] * 10  # another clone's "fix"
    lines[at] = encode_line(entry)
    path.write_bytes(b"\n".join(lines) + b"\n")  # as a `git pull` writes it

    result = catalog_build.build(Store(store))

    assert path.read_bytes() == before
    assert any(f"{name}: {entry['run_id']}" in w and "rebuilt" in w for w in result.warnings), (
        result.warnings
    )
    assert catalog_build.build(Store(store)).warnings == []  # said once, then settled


def test_a_pulled_shard_that_only_gained_lines_reads_this_clones_dirs_again_without_a_warning(
    store: Path, make_fleet: Callable[..., list[str]]
) -> None:
    make_fleet(store, 6, seed=5, step_s=3600)
    catalog_build.build(Store(store))
    _, path = next(iter_shards(store / "catalog.json"))
    before = path.read_bytes()
    path.write_bytes(before)  # touched by a pull, the same bytes

    result = catalog_build.build(Store(store))

    assert path.read_bytes() == before and result.warnings == []
    assert result.dirs_read >= 1
