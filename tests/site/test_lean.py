"""The site's lean paths give the pages of the plain one: light entries from the columnar
cache (`publish.data.load_site`), the step detector run per series in worker processes
(`publish.detection.detect_per_series`) and pages rendered in a second process
(`publish.workers.beside`)."""

from __future__ import annotations

import os
import time
from dataclasses import replace

import pytest

from benchlab.cli import main
from benchlab.detect.regress import detect
from benchlab.identity import series_of
from benchlab.layout import Store
from benchlab.publish.charts import shown
from benchlab.publish.data import PublicData, load_public, load_site
from benchlab.publish.detection import (
    detect_order,
    detect_per_series,
    find_per_series,
    merge_found,
)
from benchlab.publish.links import page_names
from benchlab.publish.site import render_pages


def _v3(store_root) -> Store:
    """The fixture store with its catalog migrated to v3 shards (`bench catalog upgrade`)."""
    assert main(["--store", str(store_root), "catalog", "upgrade"]) == 0
    return Store(store_root)


@pytest.mark.slow
def test_light_entries_render_the_same_pages(fleet_store):
    store = _v3(fleet_store)
    full = load_public(store)
    lean = load_site(store, min_bytes=0)
    assert lean.fetch is not None  # the columns answered: every run is a light entry
    assert {r["run_id"] for r in lean.runs} == {r["run_id"] for r in full.runs}
    assert lean.catalog.machines == full.catalog.machines
    assert lean.catalog.last_updated == full.catalog.last_updated
    assert render_pages(lean, workers=1).files == render_pages(full, workers=1).files


@pytest.mark.slow
def test_light_entries_compare_as_bench_compare_does(store):
    """The perf fleet's runs name their llama-bench tests only in their test lists, which
    light entries leave out: the compare page named those rows `prefill` and `decode`
    where `bench compare` (and the page over full entries) names `pp256` and `tg32`."""
    from tests.kit.fleet import load_make_fleet

    from benchlab.publish.context import SiteContext
    from benchlab.publish.pages.compare import compare_page

    def compared(data: PublicData) -> dict[str, str]:
        site = SiteContext(data, workers=1)  # no other page has made any entry full
        compare_page(site)
        return {k: v for k, v in site.files.items() if k.startswith("bl/compare/")}

    load_make_fleet().make_fleet(store, 400, seed=11)
    assert main(["--store", str(store), "catalog", "build"]) == 0
    lean = load_site(Store(store), min_bytes=0)
    assert lean.fetch is not None
    full = compared(load_public(Store(store)))
    assert any(',"pp' in text for text in full.values())  # the test names at stake
    assert compared(lean) == full


def test_light_entries_hold_the_fields_of_the_full_ones(public_store):
    store = _v3(public_store)
    full = {r["run_id"]: r for r in load_public(store).runs}
    lean = load_site(store, min_bytes=0)
    for run in lean.runs:
        whole = full[run["run_id"]]
        # How the site reads them: a missing status is ok, missing tags are none.
        read = {"status": whole.get("status", "ok"), "tags": whole.get("tags", []),
                "series": series_of(whole)}  # fmt: skip
        for key, value in run.items():
            expected = read[key] if key in read else whole.get(key)
            assert expected == value and type(expected) is type(value), key
    lean.upgrade(lean.runs[:3])
    assert lean.runs[:3] == [full[r["run_id"]] for r in lean.runs[:3]]


@pytest.mark.slow
def test_a_small_catalog_is_loaded_in_full(fleet_store):
    assert load_site(_v3(fleet_store)).fetch is None  # under the columns' threshold


@pytest.mark.slow
def test_detect_per_series_in_workers_is_detect_of_all_runs(fleet_store):
    """Cut two days after the planted step: suspects that corroborate across series."""
    data = load_public(Store(fleet_store))
    cut = [r for r in data.runs if r["timestamp"] < "2025-02-26"]
    ok_of: dict[str, list] = {}
    for run in shown(cut):
        ok_of.setdefault(series_of(run), []).append(run)
    steps, by_series = detect_per_series(ok_of, workers=2)
    expected = detect(shown(cut), None)  # every metric of every series, as the CLI
    assert steps == expected and any(s.corroborated_by for s in steps)
    assert [s.confidence for s in steps] == [s.confidence for s in expected]
    assert {s.metric for s in steps} >= {"peak_tok_per_sec", "decode_tok_per_sec"}
    key = lambda st: (st.series, st.metric, st.first_bad_run)  # noqa: E731
    assert sorted((st for found in by_series.values() for st in found), key=key) == sorted(
        steps, key=key
    )
    order = detect_order(ok_of)  # two halves, as the two processes of `beside` find them
    halves = [find_per_series(ok_of, order[part::2], 1) for part in (1, 0)]
    assert merge_found(ok_of, {**halves[0], **halves[1]}) == (steps, by_series)
    cut_data = PublicData(replace(data.catalog, runs=cut))
    assert render_pages(cut_data, workers=2).files == render_pages(cut_data, workers=1).files


def site_steps(data: PublicData, runs: int) -> tuple:
    """The steps of a site made ready by `beside` (forking from `runs` ok runs on)."""
    import benchlab.publish.workers as workers_module
    from benchlab.publish.context import SiteContext

    old = workers_module.BESIDE_RUNS
    workers_module.BESIDE_RUNS = runs
    try:
        site = SiteContext(data, workers=1, detect=False)
        with workers_module.beside(site, ()):
            pass
    finally:
        workers_module.BESIDE_RUNS = old
    return site.steps, site.series_steps, site.regressions


def _forking(monkeypatch, runs: int) -> None:
    """`beside` forks from `runs` ok runs on, on this machine's CPUs or more."""
    import benchlab.publish.workers as workers_module
    from benchlab.runtime.pool import inherits

    if not inherits():
        pytest.skip("no fork here: `beside` renders in-process only")
    monkeypatch.setattr(workers_module, "BESIDE_RUNS", runs)
    monkeypatch.setattr(workers_module, "cpus", lambda: 2)  # a one-CPU machine forks too


@pytest.mark.slow
def test_pages_rendered_beside_are_the_pages_rendered_here(fleet_store, monkeypatch):
    """Light entries: a page here upgrades some to full entries, which a page rendered
    beside never sees, so the two renders part if any page's files depend on another's.
    The run links count too: only the runs some page links get their details published."""
    import benchlab.publish.workers as workers_module
    from benchlab.publish.context import SiteContext
    from benchlab.publish.pages.home import home_page
    from benchlab.publish.pages.machines import machine_pages
    from benchlab.publish.pages.models import model_pages

    store = _v3(fleet_store)
    forks = []
    real_context = workers_module.context

    def counted():
        forks.append(1)
        return real_context()

    monkeypatch.setattr(workers_module, "context", counted)

    def where(site) -> int:
        time.sleep(0.1)  # long enough that each process takes some of these
        return os.getpid()

    def pages(runs: int):
        _forking(monkeypatch, runs)
        site = SiteContext(load_site(store, min_bytes=0), workers=1)
        with workers_module.beside(
            site, (home_page, machine_pages, model_pages, *[where] * 8)
        ) as partner:
            results = partner.results
        return site.files, site.links.linked, results[:3], set(results[3:])

    here = pages(10**9)
    assert forks == [] and here[3] == {os.getpid()}
    forked = pages(0)
    assert forks == [1] and len(forked[3]) == 2  # pages rendered in both processes
    assert forked[:3] == here[:3]
    # The whole render: the detector's pass split between the two processes.
    full = load_public(store)
    split = render_pages(full, workers=1)
    assert forks == [1, 1]
    steps = site_steps(full, 0)
    assert steps[0] and steps[2] and steps == site_steps(full, 10**9)
    _forking(monkeypatch, 10**9)
    assert split == render_pages(full, workers=1)  # files and nav
    models = next(item["Models"] for item in split.nav if "Models" in item)
    names = page_names(full).models.values()
    assert [page for item in models for page in item.values()] == [f"models/{n}" for n in names]
    assert len(models) >= 2  # shared out between the two processes
    assert (
        render_pages(load_site(store, min_bytes=0), workers=1).files
        == render_pages(load_public(store), workers=1).files
    )  # the whole render, with its pages beside, as the plain one


def test_a_page_that_fails_beside_fails_the_render(public_store, monkeypatch):
    """Wherever a page fails, here or in the forked process, the render fails with it."""
    import benchlab.publish.site as site_module

    here = os.getpid()

    def failing_beside(page):
        def render(*args, **kwargs):
            if os.getpid() != here:
                raise RuntimeError("a page beside: planted fault")
            time.sleep(0.1)  # the forked process takes a page meanwhile
            return page(*args, **kwargs)

        return render

    _forking(monkeypatch, 0)
    for name in ("compare_page", "machine_pages", "health_page", "home_page"):
        monkeypatch.setattr(site_module, name, failing_beside(getattr(site_module, name)))
    with pytest.raises(RuntimeError, match="planted fault"):
        render_pages(load_public(Store(public_store)), workers=1)

    def broken(site):
        raise RuntimeError("machine pages: planted fault")

    monkeypatch.setattr(site_module, "machine_pages", broken)
    with pytest.raises(RuntimeError, match="machine pages: planted fault"):
        render_pages(load_public(Store(public_store)), workers=1)


def test_series_files_that_fail_beside_fail_the_render(public_store, monkeypatch):
    """The forked process's part of the series and run files: a fault there fails the
    render, as one here does."""
    import benchlab.publish.pages.runs as runs_module
    import benchlab.publish.pages.series as series_module

    here = os.getpid()
    _forking(monkeypatch, 0)
    for module, name in ((series_module, "series_data"), (runs_module, "run_file")):
        real = getattr(module, name)

        def failing(site, sid, real=real, name=name):
            if os.getpid() != here:
                raise RuntimeError(f"{name} beside: planted fault")
            return real(site, sid)

        with monkeypatch.context() as patch:
            patch.setattr(module, name, failing)
            with pytest.raises(RuntimeError, match=f"{name} beside: planted fault"):
                render_pages(load_public(Store(public_store)), workers=1)


def test_levels_that_fail_beside_fail_the_render(public_store, monkeypatch):
    from benchlab.publish.context import SiteContext

    real = SiteContext.segment_levels

    def broken(site, part, parts):
        if part == 1:
            raise RuntimeError("levels: planted fault")
        real(site, part, parts)

    _forking(monkeypatch, 0)
    monkeypatch.setattr(SiteContext, "segment_levels", broken)
    with pytest.raises(RuntimeError, match="planted fault"):
        render_pages(load_public(Store(public_store)), workers=1)


def test_the_levels_segmented_ahead_are_every_window_the_pages_read(fleet_store, monkeypatch):
    """`beside` has each process segment half the level windows ahead of the pages and
    swap them: a window that the pages read and the halves missed would be segmented in
    both processes again."""
    import benchlab.query.level as level_module
    from benchlab.publish.context import SiteContext
    from benchlab.publish.pages.compare import compare_page
    from benchlab.publish.pages.home import home_page
    from benchlab.publish.pages.machines import machine_pages
    from benchlab.publish.pages.models import model_pages
    from benchlab.publish.pages.series import series_part

    site = SiteContext(load_public(Store(fleet_store)), workers=1)
    site.segment_levels(0, 2)
    half = len(site.level_memo)
    site.segment_levels(1, 2)
    ahead = dict(site.level_memo)
    assert 0 < half < len(ahead)
    segmented = []
    real = level_module.find_steps
    monkeypatch.setattr(
        level_module, "find_steps", lambda *a, **k: segmented.append(1) or real(*a, **k)
    )
    for page in (home_page, compare_page, machine_pages, model_pages):
        page(site)
    series_part(site, 0, 1)
    assert segmented == [] and site.level_memo == ahead


def test_trends_thinned_once_per_series_are_the_plain_trend_chart(fleet_store, monkeypatch):
    """Thinning to 8 points (most fleet histories are longer), with one series whose older
    runs carry another spelling of the model's name: its machine's chart is drawn the
    plain way, its two model pages each from their own runs."""
    import benchlab.publish.context as context_module
    from benchlab.publish.charts import trend_chart
    from benchlab.publish.charts.history import trend_metrics

    monkeypatch.setattr(context_module, "TREND_POINTS", 8)
    data = load_public(Store(fleet_store))
    runs = [dict(r) for r in data.runs]
    mixed = series_of(runs[0])
    members = sorted((r for r in runs if series_of(r) == mixed), key=lambda r: r["timestamp"])
    for run in members[: len(members) // 2]:
        run["model"] = run["model"].upper()
    site = context_module.SiteContext(PublicData(replace(data.catalog, runs=runs)), workers=1)
    assert site.groups.mixed == {mixed}
    sids_of: dict[str, list[str]] = {}
    for sid, run in site.latest.items():
        sids_of.setdefault(run["machine_id"], []).append(sid)
    for sids in [*sids_of.values(), list(site.latest)]:
        whole = site.ok_runs_of(sids)
        plain = trend_chart(
            whole, "t", site.regressions, max_points=8, metrics=trend_metrics(whole)
        )
        assert site.trend(sids, "t").figure == plain.figure
    for model in site.pages.models:
        sids = list(site.latest_of(model))
        whole = site.ok_runs_of(sids, model)
        plain = trend_chart(
            whole, "t", site.regressions, max_points=8, metrics=trend_metrics(whole)
        )
        assert site.trend(sids, "t", model).figure == plain.figure


def test_machine_activity_from_the_last_plain_stamps_is_that_of_all_runs(tmp_path):
    from benchlab.catalog.order import machine_activity
    from benchlab.publish.data import _v3_catalog

    stamps = {
        "a": ["2025-01-02T00:00:00Z", "2025-01-01T23:00:00-05:00", "2025-01-01T00:00:00Z"],
        "b": ["2025-13-01T00:00:00Z", "2025-01-03T00:00:00Z"],  # month 13 sorts last as text
        "c": ["2025-01-01T00:00:00.5Z", "2025-01-01T00:00:00Z"],
    }
    runs = sorted(
        ({"machine_id": m, "timestamp": t} for m, ts in stamps.items() for t in ts),
        key=lambda r: r["timestamp"],
    )
    loaded = _v3_catalog(tmp_path / "catalog.json", {"machines": {"a": {"os": "Linux"}}}, runs)
    counts, last, newest = machine_activity(runs)
    assert loaded.last_updated == newest == "2025-01-03T00:00:00Z"
    assert {m: (s["runs"], s["last_run"]) for m, s in loaded.machines.items()} == {
        m: (counts[m], last[m]) for m in counts
    }
    assert last["a"] == "2025-01-01T23:00:00-05:00" and loaded.machines["a"]["os"] == "Linux"


def test_light_entries_join_runs_without_a_thread_count_as_the_loaded_catalog(store):
    """Imports without a thread count join their series where any catalog loads: light
    entries did not, so every such catalog (a million-run fleet's) fell back to loading
    every entry in full, 60 s of a 4-minute site build. One run joins a series, one stands
    apart between two; the pages are the same either way, and so are full entries read
    back."""
    from site_factory import entry, thread_runs, write_store

    from benchlab.identity import SERIES_NOTE, THREADS_NOT_RECORDED

    joining = entry("laptop", "Llama-3.2-1B", "q8", 12, 40.0, threads=None)
    apart = entry("gpu-box", "SmolLM2-135M", "q8", 12, 31.0, threads=None)
    extra = [
        *thread_runs(),
        joining.model_copy(update={"run_id": joining.run_id.replace("0000abcd", "0000nnnn")}),
        apart.model_copy(update={"run_id": apart.run_id.replace("0000abcd", "0000mmmm")}),
    ]
    write_store(store, extra)
    full = load_public(Store(store))
    lean = load_site(Store(store), min_bytes=0)
    assert lean.fetch is not None  # the columns answered
    notes = {
        r["run_id"]: r.get(SERIES_NOTE) for r in lean.runs if THREADS_NOT_RECORDED in r["tags"]
    }
    assert len(notes) == 2 and all(notes.values())
    assert {r["run_id"]: (r["series"], r["tags"]) for r in lean.runs} == {
        r["run_id"]: (series_of(r), r.get("tags", [])) for r in full.runs
    }
    wanted = [r for r in lean.runs if r["run_id"] in notes]
    by_id = {r["run_id"]: r for r in full.runs}
    assert lean.fetch(wanted) == [by_id[r["run_id"]] for r in wanted]
    assert render_pages(lean, workers=1).files == render_pages(full, workers=1).files


def test_the_query_cache_renders_the_pages_of_the_catalog_itself(fleet_store, monkeypatch):
    """The site loads through the store's query cache (marshal, with each batch curve kept
    as JSON bytes and equal tag lists shared): the pages it renders are those of the
    catalog parsed afresh, batch curves included."""
    store = _v3(fleet_store)
    store.query_cache.unlink(missing_ok=True)
    fresh = render_pages(load_public(store, cached=True), workers=1)
    assert store.query_cache.is_file()  # the first load kept it
    import benchlab.catalog.read as read_module

    def unread(path):
        raise AssertionError(f"{path}: parsed again, the query cache unused")

    monkeypatch.setattr(read_module, "_parse_catalog", unread)
    cached = load_public(store, cached=True)
    assert any(run.get("batch_curve") for run in cached.runs)
    assert all(type(run.get("batch_curve")) is not bytes for run in cached.runs)
    assert render_pages(cached, workers=1) == fresh
