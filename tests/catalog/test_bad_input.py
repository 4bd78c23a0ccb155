"""Bad input: one line naming the file and the JSON path, exit 2.

A bad tracked file (catalog, specs) stops the build with nothing written; a bad run dir is
named and skipped, and every other run still lands (one bad run never wedges the store); a
bad pulled shard line is kept as it is, named, and every other run lands (exit 0), while
validate refuses it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.kit.catalog import catalog_doc

from benchlab.layout import canonical_json

Bench = Callable[..., tuple[int, str, str]]


@pytest.fixture
def built(store: Path, make_fleet: Callable[..., list[str]], bench: Bench) -> Path:
    make_fleet(store, 12, seed=5)
    assert bench("--store", str(store), "catalog", "build")[0] == 0
    make_fleet(store, 3, seed=5, first=12, step_s=1296000)  # new runs the next build reads
    return store


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file a build writes outside the run dirs: head, shards, inventory, build cache."""
    files = [root / "catalog.json", root / "machines" / "catalog.json"]
    files += sorted((root / "catalog").rglob("*")) + sorted((root / "runs").glob(".catalog-*"))
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in files if p.is_file()}


def first_shard(root: Path) -> Path:
    """The shard with the most entries."""
    return max(sorted((root / "catalog").glob("*/*.jsonl")), key=lambda p: p.stat().st_size)


def new_run_file(root: Path, name: str) -> Path:
    """A file of one of the runs the last build has not read yet."""
    known = {e["run_id"] for e in catalog_doc(root / "catalog.json")["runs"]}
    for run_dir in sorted((root / "runs" / "by-machine").glob("*/*-20*Z")):
        if run_dir.name not in known and (run_dir / name).exists():
            return run_dir / name
    raise AssertionError(f"no new run with {name}")


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert lines[0].startswith("bench: error: ")
    return lines[0]


def skipped_line(err: str) -> str:
    lines = [line for line in err.strip().splitlines() if line.startswith("warning: skipped: ")]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def assert_only_bad_run_missing(root: Path, bad: Path, bench: Bench) -> None:
    """The other new runs are in; the bad one is not, and is read (and named) again by the
    next build rather than remembered as done."""
    ids = {e["run_id"] for e in catalog_doc(root / "catalog.json")["runs"]}
    assert len(ids) == 14 and bad.parent.name not in ids
    code, _, err = bench("--store", str(root), "catalog", "build")
    assert code == 2 and skipped_line(err)


def test_malformed_run_file(built: Path, bench: Bench) -> None:
    path = new_run_file(built, "kernel.json")
    path.write_text('{"$schema": "benchmark/kernel-results.v1", "run_id": ')
    code, out, err = bench("--store", str(built), "catalog", "build")
    assert code == 2
    assert f"{path}: line 1 column" in skipped_line(err)
    assert "1 bad run dir(s) skipped" in out
    assert_only_bad_run_missing(built, path, bench)


def test_schema_violating_run_file(built: Path, bench: Bench) -> None:
    path = new_run_file(built, "batch.json")
    doc = json.loads(path.read_text())
    doc["peak"]["agg_tok_per_sec"] = "lots"
    path.write_text(json.dumps(doc))
    code, _, err = bench("--store", str(built), "catalog", "build")
    assert code == 2
    assert f"{path}: $.peak.agg_tok_per_sec: " in skipped_line(err)
    assert_only_bad_run_missing(built, path, bench)


def test_run_id_that_escapes_the_store(built: Path, bench: Bench) -> None:
    path = new_run_file(built, "manifest.json")
    for name in ("manifest.json", "kernel.json", "batch.json", "record.json"):
        doc_path = path.parent / name
        if doc_path.exists():
            doc = json.loads(doc_path.read_text())
            doc["run_id"] = "../../etc"
            doc_path.write_text(json.dumps(doc))
    code, _, err = bench("--store", str(built), "catalog", "build")
    assert code == 2
    assert "unsafe run id '../../etc'" in skipped_line(err)
    assert_only_bad_run_missing(built, path, bench)


def test_catalog_with_duplicate_ids(built: Path, bench: Bench) -> None:
    """A v2 catalog.json (as an old clone or a hand edit leaves it) with a repeated id: the
    upgrade names it; build and validate name the upgrade."""
    path = built / "catalog.json"
    doc = catalog_doc(path)
    doc.update({"$schema": "benchmark/catalog.v2", "version": "2.0"})
    doc["runs"].insert(2, doc["runs"][0])
    path.write_text(canonical_json(doc))
    before = snapshot(built)
    for verb in ("build", "validate"):
        code, _, err = bench("--store", str(built), "catalog", verb)
        assert code == 2
        assert one_error_line(err).endswith(f"{path} is catalog v2: run `bench catalog upgrade`")
    code, _, err = bench("--store", str(built), "catalog", "upgrade")
    assert code == 2
    line = one_error_line(err)
    assert f"{path}: $.runs[2].run_id: duplicate id" in line
    assert "(also at $.runs[0])" in line
    assert snapshot(built) == before


def test_shard_with_duplicate_ids(built: Path, bench: Bench) -> None:
    shard = first_shard(built)
    lines = shard.read_bytes().splitlines(keepends=True)
    shard.write_bytes(b"".join([*lines[:2], lines[0], *lines[2:]]))
    for run_dir in built.glob(f"runs/by-machine/*/{json.loads(lines[0])['run_id']}"):
        shutil.rmtree(run_dir)  # another clone's run: no run dir here rebuilds its line
    # The build keeps the refused line where it is, names it and publishes the rest (exit 0:
    # ARCHITECTURE.md, Errors and exit codes); validate refuses it.
    code, out, err = bench("--store", str(built), "catalog", "build")
    assert code == 0 and "Traceback" not in err, err
    assert f"{shard.relative_to(built).as_posix()}:" in err and "duplicate id" in err
    assert "3 new" in out  # the fixture's new runs are published beside it
    assert shard.read_bytes().count(lines[0]) == 2  # kept byte for byte
    code, _, err = bench("--store", str(built), "catalog", "validate")
    assert code == 2
    line = one_error_line(err)
    assert shard.relative_to(built).as_posix() in line and "duplicate id" in line


def test_schema_violating_catalog(built: Path, bench: Bench) -> None:
    path = built / "catalog.json"
    doc = catalog_doc(path)
    doc.update({"$schema": "benchmark/catalog.v2", "version": "2.0"})
    doc["runs"][1]["peak_tok_per_sec"] = "fast"
    path.write_text(canonical_json(doc))
    before = snapshot(built)
    code, _, err = bench("--store", str(built), "catalog", "upgrade")
    assert code == 2
    assert f"{path}: $.runs[1].peak_tok_per_sec: " in one_error_line(err)
    assert snapshot(built) == before


def test_schema_violating_shard(built: Path, bench: Bench) -> None:
    shard = first_shard(built)
    lines = shard.read_bytes().splitlines(keepends=True)
    entry = json.loads(lines[0])
    entry["peak_tok_per_sec"] = "fast"
    lines[0] = json.dumps(entry, sort_keys=True).encode() + b"\n"
    shard.write_bytes(b"".join(lines))
    code, _, err = bench("--store", str(built), "catalog", "build")
    assert code == 0 and "Traceback" not in err, err
    assert f"{shard.relative_to(built).as_posix()}:1: peak_tok_per_sec: " in err
    assert lines[0].rstrip(b"\n") in shard.read_bytes().split(b"\n")  # kept byte for byte
    code, _, err = bench("--store", str(built), "catalog", "validate")
    assert code == 2
    line = one_error_line(err)
    assert shard.relative_to(built).as_posix() in line and "peak_tok_per_sec" in line


def test_bad_machine_specs(built: Path, bench: Bench) -> None:
    specs = next((built / "runs" / "by-machine").glob("*/specs.json"))
    doc = json.loads(specs.read_text())
    del doc["hardware"]["cpu"]["model"]
    specs.write_text(json.dumps(doc))
    before = snapshot(built)
    code, _, err = bench("--store", str(built), "catalog", "build")
    assert code == 2
    assert f"{specs}: $.hardware.cpu.model: " in one_error_line(err)
    assert snapshot(built) == before


def test_missing_store(tmp_path: Path, bench: Bench) -> None:
    missing = tmp_path / "nowhere"
    for verb in ("build", "validate"):
        code, _, err = bench("--store", str(missing), "catalog", verb)
        assert code == 2
        assert f"{missing}: no store here" in one_error_line(err)
    assert not missing.exists()


def test_validate_without_a_catalog(store: Path, bench: Bench) -> None:
    code, _, err = bench("--store", str(store), "catalog", "validate")
    assert code == 2
    assert "run `bench catalog build` first" in one_error_line(err)


def test_merge_driver_refuses_a_malformed_side(built: Path, tmp_path: Path, bench: Bench) -> None:
    ours = tmp_path / "ours.json"
    theirs = tmp_path / "theirs.json"
    base = tmp_path / "base.json"
    ours.write_bytes((built / "catalog.json").read_bytes())
    theirs.write_text("<<<<<<< HEAD\n{}\n")
    base.write_text("")
    before = ours.read_bytes()
    code, _, err = bench(
        "catalog", "merge-driver", str(base), str(ours), str(theirs), "experiments/x.json"
    )
    assert code == 2
    assert "experiments/x.json (theirs): line 1 column 1: " in one_error_line(err)
    assert ours.read_bytes() == before


def test_merge_driver_refuses_mixed_documents(built: Path, tmp_path: Path, bench: Bench) -> None:
    ours, theirs = tmp_path / "ours.json", tmp_path / "theirs.json"
    ours.write_bytes((built / "catalog.json").read_bytes())
    theirs.write_bytes((built / "machines" / "catalog.json").read_bytes())
    code, _, err = bench("catalog", "merge-driver", str(ours), str(ours), str(theirs))
    assert code == 2
    assert "$.$schema: cannot merge" in one_error_line(err)


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("machine_id", "a/b", "machine_id"),
        ("model", "m" * 3000, "model_id"),
    ],
    ids=["machine-id-with-slash", "3000-character-model"],
)
def test_a_run_with_a_bad_public_field_never_reaches_the_catalog(
    built: Path, bench: Bench, field: str, value: str, named: str
) -> None:
    path = new_run_file(built, "manifest.json")
    doc = json.loads(path.read_text())
    if field == "model":
        doc["model"]["name"] = value
    else:
        doc[field] = value
    path.write_text(json.dumps(doc))
    code, _, err = bench("--store", str(built), "catalog", "build")
    assert code == 2
    assert named in skipped_line(err) and path.parent.name in skipped_line(err)
    assert_only_bad_run_missing(built, path, bench)
    # The store is not wedged: the next builds (and a full one) still work.
    code, _, _ = bench("--store", str(built), "catalog", "build", "--full")
    assert code == 2  # the bad run is still there, still named, still skipped
    assert bench("--store", str(built), "catalog", "validate")[0] == 0


def test_a_machine_id_that_is_its_host_name_is_refused_unless_declared_public(
    built: Path, bench: Bench
) -> None:
    path = new_run_file(built, "manifest.json")
    machine = json.loads(path.read_text())["machine_id"]
    specs = path.parent.parent / "specs.json"
    doc = json.loads(specs.read_text())
    doc["hostname"] = f"{machine}.lab.example.org"
    specs.write_text(json.dumps(doc))
    code, _, err = bench("--store", str(built), "catalog", "build")
    assert code == 2 and "is the host name of this machine" in err
    catalog = catalog_doc(built / "catalog.json")
    assert machine not in {e["machine_id"] for e in catalog["runs"][12:]}
    policy = built / "redaction.yaml"
    policy.write_text(f"version: 1\nallow:\n  values: [{machine}]\n")
    assert bench("--store", str(built), "catalog", "build")[0] == 0


def build_in_a_process(root: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """`bench catalog build` in its own process, bounded: a build that blocks fails the
    test (TimeoutExpired) instead of hanging it."""
    return subprocess.run(
        [sys.executable, "-m", "benchlab", "--store", str(root), "catalog", "build", *extra],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )


@pytest.mark.slow
def test_a_fifo_record_is_set_aside_without_blocking_the_build(built: Path, bench: Bench) -> None:
    """A FIFO planted as record.json: opening it for reading would wait for a writer
    forever, holding the catalog lock (and `dvc repro` behind it)."""
    path = new_run_file(built, "record.json")
    path.unlink()
    os.mkfifo(path)
    done = build_in_a_process(built)
    assert done.returncode == 2, done.stderr
    assert f"{path}: not a regular file" in skipped_line(done.stderr)
    assert_only_bad_run_missing(built, path, bench)


def test_a_run_file_that_is_a_symlink_is_set_aside(
    built: Path, bench: Bench, tmp_path: Path
) -> None:
    path = new_run_file(built, "kernel.json")
    secret = tmp_path / "secret.json"
    secret.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(secret)
    code, _, err = bench("--store", str(built), "catalog", "build")
    assert code == 2
    assert f"{path}: a symlink" in skipped_line(err)
    assert_only_bad_run_missing(built, path, bench)


def test_a_symlinked_run_dir_pointing_outside_the_store_is_not_published(
    built: Path, bench: Bench, tmp_path: Path
) -> None:
    """`bench promote` refuses such a dir; the build must not publish it either."""
    run_dir = new_run_file(built, "manifest.json").parent
    outside = tmp_path / "elsewhere" / run_dir.name
    shutil.copytree(run_dir, outside)
    shutil.rmtree(run_dir)
    run_dir.symlink_to(outside, target_is_directory=True)
    for extra in ((), ("--full",)):
        code, _, err = bench("--store", str(built), "catalog", "build", *extra)
        assert code == 2
        assert f"{run_dir}: a symlink" in skipped_line(err)
        ids = {e["run_id"] for e in catalog_doc(built / "catalog.json")["runs"]}
        assert len(ids) == 14 and run_dir.name not in ids


def test_a_symlinked_machine_dir_is_not_published(
    built: Path, bench: Bench, tmp_path: Path, make_fleet: Callable[..., list[str]]
) -> None:
    outside = tmp_path / "elsewhere"
    make_fleet(outside, 40, seed=77, first=900)
    ours = built / "runs" / "by-machine"
    machine_dir = next(
        p
        for p in sorted((outside / "runs" / "by-machine").iterdir())
        if not (ours / p.name).exists()
    )
    theirs = {p.name for p in machine_dir.iterdir() if p.is_dir()}
    link = ours / machine_dir.name
    link.symlink_to(machine_dir, target_is_directory=True)
    code, _, err = bench("--store", str(built), "catalog", "build")
    assert code == 2
    assert f"{link}: a symlink" in skipped_line(err)
    ids = {e["run_id"] for e in catalog_doc(built / "catalog.json")["runs"]}
    assert theirs and len(ids) == 15 and not theirs & ids


def test_a_record_whose_identity_names_another_machine_is_refused(
    built: Path, bench: Bench
) -> None:
    """Filed under the identity's machine, the run would join a machine it never ran on."""
    path = new_run_file(built, "record.json")
    doc = json.loads(path.read_text())
    doc["identity"] = {"machine_id": "someone-else"}
    path.write_text(json.dumps(doc))
    code, _, err = bench("--store", str(built), "catalog", "build")
    assert code == 2
    line = skipped_line(err)
    assert f"{path}: $.identity.machine_id: 'someone-else' differs from the run's machine" in line
    assert_only_bad_run_missing(built, path, bench)
    assert not (built / "catalog" / "someone-else").exists()


def test_an_integer_past_64_bits_sets_its_run_aside_and_never_wedges_the_store(
    built: Path, bench: Bench
) -> None:
    """One 30-digit sweep param: every later build failed (orjson cannot write it)."""
    path = new_run_file(built, "record.json")
    doc = json.loads(path.read_text())
    doc["spec"]["params"] = {"big": 10**29 + 7}
    path.write_text(json.dumps(doc))
    code, _, err = bench("--store", str(built), "catalog", "build")
    assert code == 2
    line = skipped_line(err)
    assert f"{path}: $.spec.params.big: integer 10000000000000000000...(30 digits)" in line
    assert "exceeds 64 bits" in line
    assert_only_bad_run_missing(built, path, bench)
    code, _, err = bench("--store", str(built), "catalog", "build", "--full")
    assert code == 2 and skipped_line(err)
    assert bench("--store", str(built), "catalog", "validate")[0] == 0
