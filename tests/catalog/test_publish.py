"""What a build publishes beside catalog.json: redacted specs, hole tags, a warm query cache."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests.kit.catalog import catalog_doc

from benchlab.layout import Store, atomic_write_json, read_json


def test_public_specs_are_redacted_and_rewritten_only_on_change(
    store: Path, make_fleet: Callable[..., list[str]], bench: Callable
) -> None:
    make_fleet(store, 6, seed=2)
    layout = Store(store)
    private = sorted(layout.by_machine.glob("*/specs.json"))
    assert private, "the fleet has private specs"
    assert bench("--store", str(store), "catalog", "build")[0] == 0
    for path in private:
        hostname = read_json(path)["hostname"]
        public = layout.public_specs(path.parent.name)
        text = public.read_text()
        assert "hostname" not in json.loads(text) and hostname not in text
    mtimes = {p: p.stat().st_mtime_ns for p in layout.machines_dir.glob("*/specs.json")}
    assert bench("--store", str(store), "catalog", "build")[0] == 0
    assert {p: p.stat().st_mtime_ns for p in mtimes} == mtimes


def test_holes_are_tagged_in_the_catalog(
    store: Path, make_fleet: Callable, bench: Callable
) -> None:
    [run_id] = make_fleet(store, 1, seed=3)
    layout = Store(store)
    [record_path] = layout.by_machine.glob(f"*/{run_id}/manifest.json")
    machine = record_path.parent.parent.name
    spec = {
        "spec_id": "s",
        "experiment": "e",
        "device": machine,
        "machine_id": machine,
        "backend": "reference",
        "model": "tiny",
        "precision": "f32",
        "mode": "batch",
    }
    atomic_write_json(
        layout.run_dir(machine, "hole-run-20260101T000000Z") / "record.json",
        {
            "$schema": "benchmark/run-record.v1",
            "run_id": "hole-run-20260101T000000Z",
            "spec_id": "s",
            "machine_id": machine,
            "device": machine,
            "status": "failed",
            "failure_kind": "transport",
            "attempt": 0,
            "spec": spec,
            "error": "not attempted: device taken out of service. Re-run to retry this point.",
            "timings": {"started_at": "2026-01-01T00:00:00Z"},
        },
    )
    assert bench("--store", str(store), "catalog", "build")[0] == 0
    entries = {e["run_id"]: e for e in catalog_doc(layout.catalog_path)["runs"]}
    assert "hole" in entries["hole-run-20260101T000000Z"]["tags"]
    assert "hole" not in entries[run_id]["tags"]


def test_a_build_leaves_the_query_cache_warm(
    store: Path, make_fleet: Callable, bench: Callable
) -> None:
    from benchlab.catalog.read import _read_cache, cache_key, load_catalog, shards_key

    make_fleet(store, 3, seed=4)
    assert bench("--store", str(store), "catalog", "build")[0] == 0
    layout = Store(store)
    key = cache_key(layout.catalog_path.stat()) + shards_key(layout.catalog_path)
    cached = _read_cache(layout.catalog_path, layout.query_cache, key)
    assert cached is not None, "the build left a cache matching the catalog it wrote"
    parsed = load_catalog(layout.catalog_path)
    strip = ("batch_curve",)  # kept encoded in the cache until a row is printed in full
    assert [{k: v for k, v in e.items() if k not in strip} for e in cached.runs] == [
        {k: v for k, v in e.items() if k not in strip} for e in parsed.runs
    ]
    assert cached.machines == parsed.machines and cached.last_updated == parsed.last_updated
