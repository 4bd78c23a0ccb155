"""The v3 build's machinery for a million runs, on small fleets: worker processes, the
marshal build cache, one machine's shards at a time, runs that move between shards, and
the same bytes whichever way a build gets there."""

from __future__ import annotations

import json
import marshal
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchlab.catalog import build as build_module
from benchlab.catalog import buildcache
from benchlab.catalog.build import Seams, build, retract
from benchlab.catalog.buildcache import GroupCache
from benchlab.catalog.read import load_catalog
from benchlab.catalog.scan import _match
from benchlab.catalog.shards import iter_shards, shard_name
from benchlab.catalog.upgrade import LEGACY_CACHE
from benchlab.catalog.validate import validate
from benchlab.layout import Store

STEP = 86400


def tracked(root: Path) -> dict[str, bytes]:
    files = {name: path.read_bytes() for name, path in iter_shards(root / "catalog.json")}
    for name in ("catalog.json", "machines/catalog.json"):
        files[name] = (root / name).read_bytes()
    return files


def views(root: Path) -> dict[str, object]:
    """Every view file and what it reads as."""
    runs = root / "runs"
    return {
        p.relative_to(runs).as_posix(): json.loads(p.read_bytes())
        for base in ("by-model", "by-date")
        for p in sorted((runs / base).rglob("*.json"))
    }


@pytest.fixture
def workers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Small fleets take the path a million runs take: worker processes, small tasks, and
    loaded shards written out as soon as a few lines are held."""
    monkeypatch.setattr(build_module, "POOL_MIN", 1)
    monkeypatch.setattr(build_module, "CHUNK", 7)
    monkeypatch.setattr(build_module, "LOADED_LIMIT", 10)


@pytest.fixture
def fleet(store: Path, make_fleet: Callable[..., list[str]]) -> Path:
    make_fleet(store, 60, seed=11, step_s=STEP)
    return store


@pytest.mark.slow
def test_workers_and_one_process_write_the_same_bytes(
    fleet: Path, tmp_path: Path, workers: None
) -> None:
    copies = {}
    for jobs in (1, 2, 3):
        root = tmp_path / f"jobs{jobs}"
        shutil.copytree(fleet, root)
        result = build(Store(root), jobs=jobs)
        assert (result.new, result.dirs_read, result.total) == (60, 60, 60)
        copies[jobs] = root
    for jobs in (2, 3):
        assert tracked(copies[jobs]) == tracked(copies[1])
        assert views(copies[jobs]) == views(copies[1])
    assert len(views(copies[1])) == 120
    assert validate(Store(copies[2])).runs == 60


@pytest.mark.slow
def test_a_full_build_over_an_old_catalog_and_views_reconciles_them(
    fleet: Path, workers: None
) -> None:
    build(Store(fleet), jobs=2)
    before, wanted = tracked(fleet), views(fleet)
    gone = sorted((fleet / "runs" / "by-machine").glob("*/*Z"))[:4]
    for run_dir in gone:
        shutil.rmtree(run_dir)  # runs only the catalog remembers now
    stale = fleet / "runs" / "by-date" / "1999-01-01" / "old.json"
    stale.parent.mkdir(parents=True)
    stale.write_text("{}")
    missing = fleet / "runs" / next(iter(wanted))
    missing.unlink()
    result = build(Store(fleet), full=True, jobs=2)
    assert (result.total, result.kept, result.dirs_read) == (60, 60, 56)
    assert tracked(fleet) == before
    assert views(fleet) == wanted
    assert not stale.parent.exists()


def test_the_build_cache_is_a_few_marshal_files(fleet: Path, workers: None) -> None:
    build(Store(fleet), jobs=2)
    cache = fleet / "runs" / buildcache.CACHE_DIR
    names = sorted(p.name for p in cache.iterdir())
    assert "index.marshal" in names and all(n.endswith(".marshal") for n in names)
    assert not (fleet / "runs" / LEGACY_CACHE).exists()
    index = marshal.loads((cache / "index.marshal").read_bytes())
    assert index["format"] == buildcache.CACHE_FORMAT
    assert sum(p.stat().st_size for p in cache.iterdir()) < 400 * 60
    again = build(Store(fleet), jobs=2)
    assert (again.dirs_read, again.dirs_unchanged, again.new) == (0, 60, 0)


def test_a_v2_cache_left_by_an_older_build_is_dropped(fleet: Path) -> None:
    legacy = fleet / "runs" / LEGACY_CACHE
    legacy.parent.mkdir(parents=True, exist_ok=True)
    legacy.write_text('{"version": 2, "dirs": {}}')
    build(Store(fleet))
    assert not legacy.exists()


@pytest.mark.parametrize("damage", ["index", "group", "missing-group"])
def test_a_damaged_cache_costs_reads_never_a_wrong_catalog(fleet: Path, damage: str) -> None:
    build(Store(fleet))
    before, wanted = tracked(fleet), views(fleet)
    cache = fleet / "runs" / buildcache.CACHE_DIR
    group = sorted(cache.glob("g-*.marshal"))[0]
    if damage == "index":
        (cache / "index.marshal").write_bytes(b"\x00garbage")
    elif damage == "group":
        group.write_bytes(group.read_bytes()[:-7])
    else:
        group.unlink()
    result = build(Store(fleet))
    assert result.dirs_read > 0 and result.new == 0 and result.total == 60
    if damage != "index":
        assert result.dirs_unchanged > 0  # the other groups were still trusted
    assert tracked(fleet) == before and views(fleet) == wanted
    assert build(Store(fleet)).dirs_read == 0


def test_a_run_whose_week_changed_leaves_its_old_shard(fleet: Path) -> None:
    build(Store(fleet))
    run_dir = sorted((fleet / "runs" / "by-machine").glob("*/*Z"))[5]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    old = shard_name(manifest | {"machine_id": manifest["machine_id"]})
    manifest["timestamp"] = "2025-06-30T12:00:00Z"
    record_path = run_dir / "record.json"
    if record_path.exists():
        record = json.loads(record_path.read_text())
        record["timings"]["started_at"] = manifest["timestamp"]
        record_path.write_text(json.dumps(record))
    tmp = run_dir / "manifest.tmp"
    tmp.write_text(json.dumps(manifest))
    tmp.replace(run_dir / "manifest.json")
    old_view = fleet / "runs" / "by-date" / "xx"
    entry = load_catalog(fleet / "catalog.json").entry(manifest["run_id"])
    old_view = fleet / "runs" / "by-date" / entry["timestamp"][:10] / f"{entry['run_id']}.json"
    assert old_view.exists()
    result = build(Store(fleet))
    assert (result.dirs_read, result.changed, result.total) == (1, 1, 60)
    new = shard_name({"machine_id": manifest["machine_id"], "timestamp": manifest["timestamp"]})
    assert new != old
    holders = [
        name
        for name, path in iter_shards(fleet / "catalog.json")
        if manifest["run_id"].encode() in path.read_bytes()
    ]
    assert holders == [new]
    assert not old_view.exists()
    assert (fleet / "runs" / "by-date" / "2025-06-30" / f"{manifest['run_id']}.json").exists()
    assert validate(Store(fleet)).runs == 60


@pytest.mark.slow
@pytest.mark.parametrize("jobs", [1, 2])
def test_one_run_in_two_dirs_is_settled_by_the_winner_rule(
    fleet: Path, jobs: int, workers: None
) -> None:
    """A run promoted to runs/public and failed again in by-machine: both dirs are read,
    and the copy every clone keeps (ok over failed) is the one in the catalog and its
    views."""
    run_dir = next(
        p
        for p in sorted((fleet / "runs" / "by-machine").glob("*/*Z"))
        if (p / "record.json").exists()
        and json.loads((p / "record.json").read_text())["status"] == "ok"
    )
    public = fleet / "runs" / "public" / run_dir.parent.name / run_dir.name
    shutil.copytree(run_dir, public)
    record = json.loads((run_dir / "record.json").read_text())
    record.update(status="failed", failure_kind="parse", error="again")
    (run_dir / "record.json").write_text(json.dumps(record))
    result = build(Store(fleet), jobs=jobs)
    assert (result.new, result.dirs_read, result.total) == (60, 61, 60)
    entry = load_catalog(fleet / "catalog.json").entry(record["run_id"])
    assert entry["status"] == "ok"
    by_date = fleet / "runs" / "by-date" / entry["timestamp"][:10] / f"{record['run_id']}.json"
    assert json.loads(by_date.read_text())["status"] == "ok"
    assert len(views(fleet)) == 120


@pytest.mark.slow
def test_a_retracted_run_loses_its_views_and_stays_out_of_full_builds(
    fleet: Path, workers: None
) -> None:
    build(Store(fleet), jobs=2)
    run_id = load_catalog(fleet / "catalog.json").runs[3]["run_id"]
    assert retract(Store(fleet), [run_id]) == 1
    assert not [name for name in views(fleet) if run_id in name]
    result = build(Store(fleet), jobs=2)
    assert result.total == 59 and len(views(fleet)) == 118
    build(Store(fleet), full=True, jobs=2)
    assert run_id not in {e["run_id"] for e in load_catalog(fleet / "catalog.json").runs}
    assert not [name for name in views(fleet) if run_id in name]


def test_a_retraction_pulled_from_another_clone_drops_the_run_and_its_views(
    fleet: Path,
) -> None:
    """The shard merge is a union, so our copy of the entry survives a pull; the pulled
    head's `retracted` list takes it out at the next build, views and all."""
    build(Store(fleet))
    run_id = load_catalog(fleet / "catalog.json").runs[7]["run_id"]
    head = json.loads((fleet / "catalog.json").read_text())
    head["retracted"] = [run_id]
    (fleet / "catalog.json").write_text(json.dumps(head, indent=2, sort_keys=True) + "\n")
    result = build(Store(fleet))
    assert result.total == 59 and result.views_removed == 2
    assert not [name for name in views(fleet) if run_id in name]
    assert run_id not in {e["run_id"] for e in load_catalog(fleet / "catalog.json").runs}


def test_progress_counts_every_run_dir(fleet: Path, workers: None) -> None:
    seen: list[int] = []
    build(Store(fleet), jobs=2, progress=seen.append)
    assert seen == sorted(seen) and seen[-1] == 60
    seen.clear()
    build(Store(fleet), jobs=2, progress=seen.append)
    assert seen == [60]  # a no-op build: every dir unchanged, counted at once


def test_the_build_logs_its_phases(fleet: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("DEBUG", logger="benchlab.catalog"):
        build(Store(fleet))
    [line] = [r.getMessage() for r in caplog.records if "phases" in r.getMessage()]
    for phase in ("open", "stat", "read", "shards", "head", "views", "cache"):
        assert f"{phase} wall=" in line


@pytest.mark.parametrize(
    "text",
    [
        b'{"a": 1, "a": 2}',
        b'{"n": 123456789012345678901234567890}',
        b'{"n": -1234567890123456789}',
        b'{"x": 1e999}',
        b'{"x": NaN}',
        b'{"x": [Infinity]}',
        b'{"s": "\\ud800"}',
        b"\xef\xbb\xbf{}",
        "{}".encode("utf-16"),
        b'{"deep": ' + b"[" * 2000 + b"]" * 2000 + b"}",
        b'{"cut": ',
        b'{"ctl": "\x01"}',
        b'{"f": 0.1e-400, "g": 1.5e308, "z": -0.0}',
        b"\xff\xfe\xfd",
        b"",
    ],
)
def test_run_files_read_fast_exactly_as_read_json(tmp_path: Path, text: bytes) -> None:
    """orjson where it reads a file as the standard library would, read_json elsewhere:
    the same value, or the same one-line error."""
    from benchlab.catalog.extract import read_run_dir, read_run_file
    from benchlab.errors import BenchlabError
    from benchlab.layout import read_json

    path = tmp_path / "kernel.json"
    path.write_bytes(text)

    def outcome(read: Callable[[], object]) -> object:
        try:
            return ("value", read())
        except BenchlabError as exc:
            return ("error", str(exc))

    expected = outcome(lambda: read_json(path))
    assert outcome(lambda: read_run_file(path)) == expected
    files = read_run_dir(str(tmp_path))
    assert outcome(lambda: read_run_file(path, files["kernel.json"])) == expected


def test_a_machine_dir_empty_at_the_last_build_is_read_when_runs_arrive(
    fleet: Path, make_fleet: Callable[..., list[str]]
) -> None:
    empty = fleet / "runs" / "by-machine" / "new-box"
    empty.mkdir()
    assert build(Store(fleet)).total == 60
    other = fleet.parent / "other"
    make_fleet(other, 3, seed=11, first=60, step_s=STEP)
    for run_dir in sorted((other / "runs" / "by-machine").glob("*/*Z"))[:2]:
        shutil.copytree(run_dir, empty / run_dir.name)
    result = build(Store(fleet))
    assert (result.new, result.dirs_read, result.total) == (2, 2, 62)
    assert build(Store(fleet)).dirs_read == 0


def test_runs_in_a_shard_the_layout_no_longer_names_move_to_theirs(fleet: Path) -> None:
    """A shard kept under an older name (`catalog/<m>/<week>.jsonl`, before the machine id
    ended the name): its runs move to the shards the layout names now; nothing is lost."""
    build(Store(fleet))
    before, wanted = load_catalog(fleet / "catalog.json").runs, views(fleet)
    name, path = next(iter(iter_shards(fleet / "catalog.json")))
    machine = name.split("/")[1]
    old = path.with_name(path.name.replace(f".{machine}.jsonl", ".jsonl"))
    path.rename(old)
    result = build(Store(fleet))
    assert (result.new, result.changed, result.total) == (0, 0, 60)
    assert not old.exists() and path.exists()
    assert load_catalog(fleet / "catalog.json").runs == before
    assert views(fleet) == wanted
    assert validate(Store(fleet)).runs == 60


def test_the_query_cache_hook_hears_which_shards_a_build_wrote(
    fleet: Path, make_fleet: Callable[..., list[str]]
) -> None:
    heard: list[list[str] | None] = []
    seams = Seams(warm_query_cache=lambda store, shards: heard.append(shards))
    build(Store(fleet), seams=seams)
    assert heard == [sorted(name for name, _ in iter_shards(fleet / "catalog.json"))]
    build(Store(fleet), seams=seams)
    assert len(heard) == 1  # nothing written, nothing to refresh
    [run_id] = make_fleet(fleet, 1, seed=11, first=60, step_s=STEP)
    build(Store(fleet), seams=seams)
    entry = load_catalog(fleet / "catalog.json").entry(run_id)
    assert heard[-1] == [shard_name(entry)]


@st.composite
def _listings(draw: st.DrawFn) -> tuple[list[str], np.ndarray, GroupCache]:
    """A group as the cache holds it and as it is listed now: dirs kept, removed, added,
    touched, renamed (same inode, new name), and inodes reused by other names."""
    old_names = draw(st.lists(st.sampled_from([f"r{i}" for i in range(12)]), unique=True))
    inode = {name: 100 + i for i, name in enumerate(old_names)}
    old_sig = np.array([[1, 1, inode[n]] for n in old_names], np.int64).reshape(-1, 3)
    names, rows = [], []
    for name in old_names:
        fate = draw(st.sampled_from(["keep", "gone", "touched", "renamed"]))
        if fate == "gone":
            continue
        ino = inode[name]
        names.append(name if fate != "renamed" else f"{name}-moved")
        rows.append([2 if fate == "touched" else 1, 1, ino])
    for extra in draw(st.lists(st.sampled_from([f"n{i}" for i in range(6)]), unique=True)):
        reused = draw(st.sampled_from([None, *inode.values()]))
        if reused is None or reused in {r[2] for r in rows}:
            reused = 1000 + len(names)
        names.append(extra)
        rows.append([1, 1, reused])
    order = draw(st.permutations(range(len(names))))
    names = [names[i] for i in order]
    sig = np.array([rows[i] for i in order], np.int64).reshape(-1, 3)
    cached = GroupCache(old_names, old_sig, np.zeros(len(old_names), np.int32))
    return names, sig, cached


@settings(max_examples=300, deadline=None)
@given(_listings())
def test_match_pairs_rows_by_name_as_a_dict_would(case: tuple) -> None:
    names, sig, cached = case
    where, same = _match(names, sig, cached)
    index = {name: i for i, name in enumerate(cached.names)}
    expected = [index.get(name, -1) for name in names]
    assert where.tolist() == expected
    for i, row in enumerate(expected):
        assert bool(same[i]) == (row >= 0 and cached.sig[row].tolist() == sig[i].tolist())
