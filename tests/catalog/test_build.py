"""`bench catalog build` and `validate` on a small synthetic fleet (the sharded v3 catalog)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from benchlab.catalog.build import build
from benchlab.catalog.merge_driver import merge_files
from benchlab.catalog.read import LoadedCatalog, load_catalog
from benchlab.catalog.shards import iter_shards, parse_lines, render_shard
from benchlab.layout import Store, canonical_json

Bench = Callable[..., tuple[int, str, str]]


@pytest.fixture
def fleet(store: Path, make_fleet: Callable[..., list[str]]) -> Path:
    make_fleet(store, 40, seed=7)
    return store


def views(root: Path) -> list[str]:
    runs = root / "runs"
    return sorted(
        p.relative_to(runs).as_posix()
        for base in ("by-model", "by-date")
        for p in (runs / base).rglob("*.json")
    )


def catalog(root: Path) -> LoadedCatalog:
    return load_catalog(root / "catalog.json")


def tracked(root: Path) -> dict[str, bytes]:
    """Every public catalog file: the head, the shards, the inventory."""
    files = {name: path.read_bytes() for name, path in iter_shards(root / "catalog.json")}
    for name in ("catalog.json", "machines/catalog.json"):
        files[name] = (root / name).read_bytes()
    return files


def pull(ours: Path, theirs: Path) -> None:
    """What `git pull` through the merge driver leaves: their catalog files merged into ours."""
    merge_files(ours / "catalog.json", ours / "catalog.json", theirs / "catalog.json")
    for name, path in iter_shards(theirs / "catalog.json"):
        target = ours / name
        if target.exists():
            merge_files(target, target, path, name)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)


def test_build_writes_a_valid_redacted_catalog(fleet: Path, bench: Bench) -> None:
    code, out, err = bench("--store", str(fleet), "catalog", "build")
    assert (code, err) == (0, "")
    assert out.startswith("catalog: 40 new, 0 changed, 0 kept, 40 runs")
    text = (fleet / "catalog.json").read_text()
    head = json.loads(text)
    assert text == canonical_json(head)
    assert head["$schema"] == "benchmark/catalog.v3" and "runs" not in head
    shards = {name: path.read_bytes() for name, path in iter_shards(fleet / "catalog.json")}
    for name, raw in shards.items():
        assert raw == render_shard(parse_lines(raw, name))  # canonical, sorted by run id
    runs = catalog(fleet).runs
    assert len(runs) == 40
    assert [e["run_id"] for e in runs] == sorted(e["run_id"] for e in runs)
    assert catalog(fleet).last_updated == max(e["timestamp"] for e in runs)
    assert sum(m["runs"] for m in catalog(fleet).machines.values()) == 40
    assert {e["status"] for e in runs} <= {"ok", "failed"}
    everything = "".join(
        [text, (fleet / "machines" / "catalog.json").read_text()]
        + [raw.decode() for raw in shards.values()]
    )
    assert "hostname" not in everything
    assert "ANTHONY-WIN" not in everything and "raspberrypi" not in everything
    assert str(fleet) not in everything
    assert bench("--store", str(fleet), "catalog", "validate")[0] == 0


def test_two_builds_from_the_same_runs_are_byte_identical(
    tmp_path: Path, make_fleet: Callable[..., list[str]]
) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    make_fleet(one, 30, seed=3)
    shutil.copytree(one, two)
    build(Store(one))
    build(Store(two), full=True)
    build(Store(two))  # and a no-op rebuild changes nothing
    assert tracked(one) == tracked(two)
    assert views(one) == views(two)


def test_incremental_build_reads_only_new_dirs(
    fleet: Path, make_fleet: Callable[..., list[str]]
) -> None:
    first = build(Store(fleet))
    assert first.dirs_read == 40
    make_fleet(fleet, 5, seed=7, first=40, step_s=388800)
    second = build(Store(fleet))
    assert (second.new, second.dirs_read, second.dirs_unchanged) == (5, 5, 40)
    assert second.total == 45 and second.kept == 40
    incremental = tracked(fleet)
    build(Store(fleet), full=True)
    assert tracked(fleet) == incremental
    assert len(views(fleet)) == 90


def test_a_rewritten_record_is_read_again_and_is_the_truth(fleet: Path) -> None:
    build(Store(fleet))
    record_path = next(fleet.glob("runs/by-machine/*/*/record.json"))
    record = json.loads(record_path.read_text())
    if record["status"] == "ok":
        record.update(status="failed", failure_kind="parse", error="bad")
    else:
        record.update(status="ok", failure_kind=None, error=None)
    tmp = record_path.with_name("record.tmp")
    tmp.write_text(json.dumps(record))
    tmp.replace(record_path)  # how the runner writes: a rename into the dir
    result = build(Store(fleet))
    assert result.dirs_read == 1
    entry = catalog(fleet).entry(record["run_id"])
    # The run dir on this clone is the truth about its run, in both directions: a run
    # found broken after the fact is marked failed, a retried one ok.
    assert entry["status"] == record["status"]
    assert result.changed == 1
    incremental = tracked(fleet)
    build(Store(fleet), full=True)
    assert tracked(fleet) == incremental


def test_entries_whose_run_dirs_vanished_are_kept(fleet: Path, bench: Bench) -> None:
    build(Store(fleet))
    before = catalog(fleet).runs
    gone = sorted((fleet / "runs" / "by-machine").glob("*/*-20*Z"))[:3]
    for run_dir in gone:
        shutil.rmtree(run_dir)
    result = build(Store(fleet), full=True)
    assert result.total == 40 and result.kept == 40
    assert catalog(fleet).runs == before
    assert len(views(fleet)) == 80  # the absent runs keep their views too
    code, out, err = bench("--store", str(fleet), "catalog", "validate")
    assert code == 0
    assert "40 runs valid, 3 run dirs absent here" in out
    warned = [line for line in err.splitlines() if line.startswith("warning: ")]
    assert len(warned) == 3
    assert all("run dir absent" in line for line in warned)


def test_views_follow_the_catalog(fleet: Path) -> None:
    build(Store(fleet))
    names = views(fleet)
    assert len(names) == 80
    entry = catalog(fleet).runs[0]
    by_date = fleet / "runs" / "by-date" / entry["timestamp"][:10] / f"{entry['run_id']}.json"
    assert json.loads(by_date.read_text()) == entry
    stale = fleet / "runs" / "by-model" / "gone-model" / "x.json"
    stale.parent.mkdir(parents=True)
    stale.write_text("{}")
    by_date.unlink()
    build(Store(fleet), full=True)
    assert not stale.exists() and not stale.parent.exists()
    assert by_date.exists()
    assert views(fleet) == names


def test_a_pulled_catalog_is_revalidated_and_its_new_entries_get_views(
    fleet: Path, tmp_path: Path, make_fleet: Callable[..., list[str]]
) -> None:
    build(Store(fleet))
    other = tmp_path / "other"
    make_fleet(other, 3, seed=99)
    build(Store(other))
    pull(fleet, other)
    result = build(Store(fleet))
    # Only this clone's dirs whose lines sit in a shard the pull changed are read again.
    assert (result.total, result.new, result.changed) == (43, 0, 0)
    assert result.dirs_read < 5 and result.dirs_unchanged >= 35
    assert len(views(fleet)) == 86
    assert len(catalog(fleet).runs) == 43


def test_a_pulled_shard_line_that_is_broken_is_kept_named_and_not_published(
    fleet: Path, tmp_path: Path, make_fleet: Callable[..., list[str]]
) -> None:
    build(Store(fleet))
    name, path = next(iter_shards(fleet / "catalog.json"))
    line = json.loads(path.read_bytes().splitlines()[0])
    line["status"] = "maybe"
    path.write_bytes(path.read_bytes() + json.dumps(line).encode() + b"\n")
    before = tracked(fleet)
    result = build(Store(fleet))
    assert result.set_aside == 1 and not result.skipped
    assert any(f"{name}:" in w and "status: " in w for w in result.warnings)
    assert tracked(fleet) == before


def test_machine_summaries_come_from_specs_without_hostnames(fleet: Path) -> None:
    build(Store(fleet))
    machines = catalog(fleet).machines
    pi5 = machines.get("pi5") or next(iter(machines.values()))
    assert set(pi5) >= {"id", "os", "arch", "cpu_cores", "runs", "last_run"}
    head = json.loads((fleet / "catalog.json").read_text())
    assert set(head["machines"]) == set(machines)
    assert "hostname" not in json.dumps(head)
    inventory = json.loads((fleet / "machines" / "catalog.json").read_text())
    assert inventory["$schema"] == "benchmark/machine-inventory.v1"
    assert set(inventory["machines"]) >= set(machines)
    assert all(m["checklist"]["in_catalog"] for k, m in inventory["machines"].items())


def test_json_summary(fleet: Path, bench: Bench) -> None:
    code, out, _ = bench("--store", str(fleet), "catalog", "build", "--format", "json")
    assert code == 0
    assert json.loads(out)["new"] == 40


def test_an_empty_store_builds_an_empty_catalog(store: Path, bench: Bench) -> None:
    code, out, _ = bench("--store", str(store), "catalog", "build")
    assert code == 0 and out.startswith("catalog: 0 new, 0 changed, 0 kept, 0 runs")
    assert catalog(store).runs == [] and catalog(store).last_updated is None
    assert not list(iter_shards(store / "catalog.json"))
    assert bench("--store", str(store), "catalog", "validate")[0] == 0
