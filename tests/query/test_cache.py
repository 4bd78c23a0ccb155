"""The query cache: reused while catalog.json is unchanged, never trusted once it changes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.kit.catalog import write_v3_catalog
from tests.kit.cli import run_cli

from benchlab.catalog import read
from benchlab.catalog.read import load_catalog
from benchlab.errors import SchemaError
from benchlab.layout import Store

from .conftest import LAPTOP_Q8

CURVE = [{"agg_tok_per_sec": 70.6, "batch": 1}, {"agg_tok_per_sec": 862.2, "batch": 64}]


def _no_parse(path: Path) -> Any:
    raise AssertionError("catalog.json parsed although the cache is current")


def test_cache_is_written_then_used(golden: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = Store(golden)
    first = load_catalog(store.catalog_path, cache=store.query_cache)
    assert store.query_cache.is_file()
    monkeypatch.setattr(read, "_parse_catalog", _no_parse)
    again = load_catalog(store.catalog_path, cache=store.query_cache)
    assert again.runs == first.runs and again.machines == first.machines
    assert again.last_updated == first.last_updated == "2025-01-09T10:00:00Z"


def test_a_changed_catalog_misses_the_cache(golden: Path) -> None:
    store = Store(golden)
    runs = load_catalog(store.catalog_path, cache=store.query_cache).runs
    write_v3_catalog(golden, runs[:2])  # as a build does: new files under the old names
    assert len(load_catalog(store.catalog_path, cache=store.query_cache).runs) == 2


def test_a_malformed_catalog_is_refused_even_with_a_cache(golden: Path) -> None:
    store = Store(golden)
    load_catalog(store.catalog_path, cache=store.query_cache)
    entry = load_catalog(store.catalog_path).runs[0]
    doc = json.loads(store.catalog_path.read_text())
    doc["runs"] = [{**entry, "speedup": "x"}]  # a pending run in the head, malformed
    store.catalog_path.write_text(json.dumps(doc))
    with pytest.raises(SchemaError, match=r"\$\.runs\[0\]: speedup"):
        load_catalog(store.catalog_path, cache=store.query_cache)


@pytest.mark.parametrize("junk", [b"", b"\x00garbage", b"\xe9\x03\x00\x00"])
def test_a_damaged_cache_is_ignored_and_rewritten(golden: Path, junk: bytes) -> None:
    store = Store(golden)
    store.query_cache.parent.mkdir(parents=True)
    store.query_cache.write_bytes(junk)
    assert len(load_catalog(store.catalog_path, cache=store.query_cache).runs) == 7
    assert store.query_cache.read_bytes() != junk


def test_an_unwritable_cache_only_costs_speed(golden: Path) -> None:
    store = Store(golden)
    store.query_cache.parent.parent.mkdir(parents=True, exist_ok=True)
    store.query_cache.parent.write_text("a file where the cache dir should be")
    assert len(load_catalog(store.catalog_path, cache=store.query_cache).runs) == 7


def test_batch_curves_survive_the_cache(golden: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = Store(golden)
    runs = load_catalog(store.catalog_path).runs
    for entry in runs:
        if entry["run_id"] == LAPTOP_Q8:
            entry["batch_curve"] = CURVE
    write_v3_catalog(golden, runs)
    argv = ["best", "--ever", "--model", "smollm2-135m", "--format", "json"]
    cold = run_cli(capsys, *argv)
    assert store.query_cache.is_file()
    warm = run_cli(capsys, *argv)
    assert cold == warm
    assert json.loads(warm[1])[0]["batch_curve"] == CURVE


def test_the_cache_is_never_read_nor_written_through_a_linked_dir(
    golden: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A committed link at runs/.cache: the catalog is read afresh, every answer stands,
    nothing is written where the link points, and a current cache found there is not read."""
    store = Store(golden)
    plain = load_catalog(store.catalog_path, cache=store.query_cache).runs  # a current cache
    outside = tmp_path / "outside"
    store.query_cache.parent.rename(outside)
    planted = outside / store.query_cache.name
    store.query_cache.parent.symlink_to(outside, target_is_directory=True)
    kept = planted.read_bytes()

    parsed: list[Path] = []
    real = read._parse_catalog
    monkeypatch.setattr(read, "_parse_catalog", lambda path: parsed.append(path) or real(path))
    assert load_catalog(store.catalog_path, cache=store.query_cache).runs == plain
    assert parsed == [store.catalog_path]  # read afresh, the linked copy passed over
    code, _, err = run_cli(capsys, "--store", str(golden), "list", "--format", "json")
    assert code == 0 and "Traceback" not in err
    assert [p.name for p in outside.iterdir()] == [planted.name]
    assert planted.read_bytes() == kept  # never rewritten through the link
