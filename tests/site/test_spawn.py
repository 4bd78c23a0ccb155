"""The site without fork (macOS, Windows): `benchlab.runtime.pool` spawns the step detector's
workers and renders the pages in-process, and the site is the same as with fork."""

from __future__ import annotations

from pathlib import Path

import pytest

import benchlab.publish.detection as detection_module
import benchlab.publish.site as site_module
import benchlab.runtime.pool as pool
from benchlab.cli import main
from benchlab.errors import ConfigError
from benchlab.layout import Store
from benchlab.publish.data import load_public


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The start method of every pool `benchlab.runtime.pool` opens (the real pools still run)."""
    methods: list[str] = []
    real = pool.context

    def recording():  # type: ignore[no-untyped-def]
        ctx = real()
        methods.append(ctx.get_start_method())
        return ctx

    monkeypatch.setattr(pool, "context", recording)
    return methods


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.slow
def test_spawned_workers_render_the_pages_of_one_process(
    fleet_store: Path, monkeypatch: pytest.MonkeyPatch, started: list[str]
) -> None:
    assert main(["--store", str(fleet_store), "catalog", "upgrade"]) == 0
    data = load_public(Store(fleet_store))
    alone = site_module.render_pages(data, workers=1).files
    assert started == []
    monkeypatch.setenv(pool.START_METHOD_ENV, "spawn")
    assert site_module.render_pages(data, workers=2).files == alone
    assert started == ["spawn"]  # the detector; the pages (not picklable) ran here


@pytest.mark.slow
def test_bench_site_build_with_spawn_only(
    fleet_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, started: list[str]
) -> None:
    """A whole `bench site build` (mkdocs too) whose workers are spawned, as on macOS."""
    assert main(["--store", str(fleet_store), "catalog", "upgrade"]) == 0
    monkeypatch.setattr(detection_module, "PARALLEL_RUNS", 1)  # a small site in workers
    forked, spawned = tmp_path / "forked", tmp_path / "spawned"
    assert main(["--store", str(fleet_store), "site", "build", "--output", str(forked)]) == 0
    assert started == ["fork", "fork", "fork"]  # detector, series pages, run files
    monkeypatch.setenv(pool.START_METHOD_ENV, "spawn")
    assert main(["--store", str(fleet_store), "site", "build", "--output", str(spawned)]) == 0
    assert started[3:] == ["spawn"]
    assert (spawned / "index.html").is_file()
    assert _files(spawned).keys() == _files(forked).keys()


def test_pool_map_passes_shared_input_to_spawned_workers(
    monkeypatch: pytest.MonkeyPatch, started: list[str]
) -> None:
    monkeypatch.setenv(pool.START_METHOD_ENV, "spawn")
    histories = {"a": [{"run_id": "r1"}], "b": [{"run_id": "r2"}, {"run_id": "r3"}]}
    try:
        got = pool.pool_map(
            detection_module._detect_series,
            ["a", "b"],
            2,
            setup=detection_module._set_detect_input,
            shared=histories,
        )
    finally:
        detection_module._set_detect_input({})
    assert started == ["spawn"]
    # Runs without metrics: no steps in any metric, no history tested, no metric judged.
    assert [found[1:] for found in got] == [([], 0, []), ([], 0, [])]


def test_unknown_start_method_is_one_line() -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(pool.START_METHOD_ENV, "teleport")
        with pytest.raises(ConfigError, match=r"^BENCHLAB_START_METHOD='teleport': not a start"):
            pool.start_method()


def test_cpus_follow_the_affinity_mask() -> None:
    import os

    if not hasattr(os, "sched_getaffinity"):
        pytest.skip("no affinity call on this OS")
    assert pool.cpus() == len(os.sched_getaffinity(0)) <= (os.cpu_count() or 1)
