"""Writes routed through the guarded writer with their root (ARCHITECTURE.md, One reader and
one writer path): a committed link on the way to onboarding's files or to `bench schemas
--write`'s output is refused in one line, and nothing is written outside."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from benchlab.errors import UnsafePathError
from benchlab.layout import Store
from benchlab.machines.onboard import record_specs_history, write_machine_id

Bench = Callable[..., tuple[int, str, str]]


def test_a_linked_specs_history_dir_is_refused_by_onboarding(store: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    machine = store / "machines" / "lab-1"
    machine.mkdir(parents=True)
    (machine / "specs.json").write_text(json.dumps({"machine_id": "lab-1"}))
    (machine / "history").symlink_to(outside, target_is_directory=True)

    with pytest.raises(UnsafePathError, match="symbolic link"):
        record_specs_history(Store(store), "lab-1", stamp="20260101T000000Z")

    assert list(outside.iterdir()) == []


def test_a_linked_machine_id_file_is_refused_by_onboarding(store: Path, tmp_path: Path) -> None:
    repo = store.parent.parent
    (repo / ".git").mkdir()
    target = tmp_path / "outside-id"
    (repo / ".bench-machine-id").symlink_to(target)

    with pytest.raises(UnsafePathError, match="symbolic link"):
        write_machine_id(store, "lab-1")

    assert not target.exists()


def test_bench_schemas_write_refuses_a_linked_schemas_dir(tmp_path: Path, bench: Bench) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo / "schemas").symlink_to(outside, target_is_directory=True)

    code, out, err = bench("schemas", "--write", "--dir", str(repo / "schemas"))

    assert code != 0 and out == "" and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and "symbolic link" in err, err
    assert list(outside.iterdir()) == []


# --- every write under a store, whichever verb makes it (layout.guard_store) -------------

SWEEP_CODE = "import json; print(json.dumps(dict(decode=11)))"


def _outside(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir(exist_ok=True)
    return outside


def _written(outside: Path) -> list[str]:
    return sorted(p.relative_to(outside).as_posix() for p in outside.rglob("*"))


def _link(path: Path, outside: Path) -> None:
    """Make `path` a link to `outside`, in place of what is there (a dir a fixture made)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(outside, target_is_directory=True)


def _refused(code: int, out: str, err: str) -> None:
    """One line naming a symbolic link, a non-zero exit, no traceback."""
    assert code != 0 and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1 and "symbolic link" in err, err


def _sweep(tmp_path: Path) -> Path:
    from tests.kit.configs import write_sweep
    from tests.sweep.lab import ONE_ATTEMPT, command_params

    return write_sweep(
        tmp_path / "linktest.yaml",
        experiment="linktest",
        policies=ONE_ATTEMPT,
        matrix={"backend": "command", "params": command_params(SWEEP_CODE)},
    )


@pytest.mark.parametrize(
    "linked",
    ["runs", "runs/sweeps", "runs/sweeps/linktest", "runs/devices/local"],
)
def test_a_sweep_writes_nothing_through_a_link(
    store: Path, tmp_path: Path, bench: Bench, monkeypatch: pytest.MonkeyPatch, linked: str
) -> None:
    """The sweep's lock, state, schedule, retries, assignments, in-flight counts and the
    device history: a committed link anywhere on the way is refused, nothing lands outside."""
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    outside = _outside(tmp_path)
    _link(store / linked, outside)

    code, out, err = bench("run", str(_sweep(tmp_path)))

    _refused(code, out, err)
    assert _written(outside) == []


def test_a_sweep_run_through_the_api_writes_nothing_through_a_link(
    store: Path, tmp_path: Path
) -> None:
    """`run_sweep` guards its store itself: a script that calls it (no CLI around it) gets
    the same refusal for the sweep's own state."""
    from benchlab.sweep.config import load_sweep_config
    from benchlab.sweep.scheduler import run_sweep

    outside = _outside(tmp_path)
    _link(store / "runs" / "sweeps", outside)
    path = _sweep(tmp_path)

    with pytest.raises(UnsafePathError, match="symbolic link"):
        run_sweep(Store(store), load_sweep_config(path), path)
    assert _written(outside) == []


@pytest.fixture
def golden_store(store: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The query tests' golden store: a catalog and one run dir."""
    from tests.kit.runs import write_run
    from tests.query.conftest import LAPTOP_Q8, LAPTOP_Q8_RECORD, golden_entries, write_catalog

    write_catalog(store, golden_entries())
    write_run(store, LAPTOP_Q8, **LAPTOP_Q8_RECORD)
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    return store


@pytest.mark.parametrize("linked", ["runs/.catalog-aside", "runs/by-model", "runs/by-date"])
def test_a_catalog_build_writes_nothing_through_a_link(
    golden_store: Path, tmp_path: Path, bench: Bench, linked: str
) -> None:
    """The build's kept old versions and journal, and its views: refused in one line."""
    outside = _outside(tmp_path)
    _link(golden_store / linked, outside)

    code, out, err = bench("catalog", "build")

    _refused(code, out, err)
    assert _written(outside) == []


def test_a_linked_build_cache_only_costs_speed(
    golden_store: Path, tmp_path: Path, bench: Bench
) -> None:
    """A link at the build cache: the build succeeds, reads every run, writes nothing there
    and never reads a cache planted behind the link."""
    outside = _outside(tmp_path)
    (outside / "index.marshal").write_bytes(b"planted")
    _link(golden_store / "runs" / ".catalog-cache", outside)

    code, _, err = bench("catalog", "build")

    assert code == 0, err
    assert _written(outside) == ["index.marshal"]
    assert (outside / "index.marshal").read_bytes() == b"planted"


@pytest.mark.parametrize("verb", [("table",), ("best",)])
def test_query_caches_are_neither_read_nor_written_through_a_link(
    golden_store: Path,
    tmp_path: Path,
    bench: Bench,
    monkeypatch: pytest.MonkeyPatch,
    verb: tuple[str, ...],
) -> None:
    """The columns cache and the level memo under runs/.cache: with a link there the answer
    is the same as without, and nothing lands where the link points."""
    monkeypatch.setenv("BENCHLAB_QUERY_COLUMNS", "always")
    want = bench(*verb)
    outside = _outside(tmp_path)
    _link(golden_store / "runs" / ".cache", outside)

    assert bench(*verb) == want
    assert _written(outside) == []


def test_the_level_memo_is_neither_read_nor_written_through_a_link(
    store: Path, tmp_path: Path
) -> None:
    """`bench best`'s step memo (query.level): a linked runs/.cache is passed over."""
    from benchlab.query.level import MEMO_NAME, load_memo, save_memo

    outside = _outside(tmp_path)
    path = Store(store).query_cache.parent / MEMO_NAME
    save_memo(path, {"series": 3}, 0, store)  # a real memo, then the link in its place
    (outside / MEMO_NAME).write_bytes(path.read_bytes())
    _link(path.parent, outside)

    assert load_memo(path, store) == {}
    save_memo(path, {"series": 3, "other": 4}, 0, store)
    assert _written(outside) == [MEMO_NAME]
    assert load_memo(outside / MEMO_NAME) == {"series": 3}


def _snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_mark_outlier_writes_no_record_through_a_link(
    golden_store: Path, tmp_path: Path, bench: Bench
) -> None:
    """A linked machine dir holding a copy of the run: the record there is never rewritten."""
    machine = golden_store / "runs" / "by-machine" / "anthony-laptop"
    outside = tmp_path / "outside"
    shutil.copytree(machine, outside)
    before = _snapshot(outside)
    _link(machine, outside)
    run_id = next(p.name for p in outside.iterdir() if p.is_dir())

    code, out, err = bench("mark-outlier", run_id, "--reason", "thermal")

    _refused(code, out, err)
    assert _snapshot(outside) == before


@pytest.mark.parametrize("linked", ["runs", "runs/by-machine", "runs/by-machine/rig"])
def test_machines_set_writes_no_specs_through_a_link(
    store: Path, tmp_path: Path, bench: Bench, linked: str
) -> None:
    outside = _outside(tmp_path)
    _link(store / linked, outside)

    code, out, err = bench("--store", str(store), "machines", "set", "rig", "--mem-bandwidth", "9")

    _refused(code, out, err)
    assert _written(outside) == []


@pytest.mark.parametrize("linked", ["runs", "runs/by-machine", "runs/by-machine/rig"])
def test_migrate_writes_no_run_through_a_link(
    store: Path, tmp_path: Path, bench: Bench, linked: str
) -> None:
    data = Path(__file__).resolve().parent / "data" / "migrate" / "llama-bench.json"
    outside = _outside(tmp_path)
    _link(store / linked, outside)

    code, out, err = bench("--store", str(store), "migrate", str(data), "--machine-id", "rig")

    _refused(code, out, err)
    assert _written(outside) == []


def test_compiled_site_templates_are_not_kept_behind_a_link(store: Path, tmp_path: Path) -> None:
    """Compiled templates are code: with runs/.cache linked, no cache is named (the site
    compiles afresh, as without a store), so none is read or written there."""
    from benchlab.publish.templating import environment, templates_cache

    assert templates_cache(store) == store / "runs" / ".cache" / "site-templates"
    outside = _outside(tmp_path)
    _link(store / "runs" / ".cache", outside)

    assert templates_cache(store) is None
    environment(templates_cache(store)).get_template("home.md.j2")
    assert _written(outside) == []


# --- the gate's verdict, promote's public copy, the merge driver's .gitattributes ---------


def _gated_run(store: Path, tmp_path: Path) -> Path:
    """One ok run of experiment `linktest` (machine anthony-laptop) and a sweep config whose
    gate it meets; returns the config."""
    from tests.kit.configs import write_sweep
    from tests.kit.runs import write_run
    from tests.sweep.lab import ONE_ATTEMPT, command_params

    write_run(store, experiment="linktest")
    return write_sweep(
        tmp_path / "gated.yaml",
        experiment="linktest",
        policies=ONE_ATTEMPT,
        gates=[{"metric": "decode_tok_per_sec", "min": 1}],
        matrix={"backend": "command", "params": command_params(SWEEP_CODE)},
    )


def _linked_machine(store: Path, tmp_path: Path) -> tuple[Path, dict[str, bytes]]:
    """The run's machine dir moved outside the store and linked back in its place: the
    outside dir and what it held."""
    machine = store / "runs" / "by-machine" / "anthony-laptop"
    outside = tmp_path / "outside"
    shutil.copytree(machine, outside)
    _link(machine, outside)
    return outside, _snapshot(outside)


def test_regression_gates_writes_no_verdict_through_a_link(
    store: Path, tmp_path: Path, bench: Bench
) -> None:
    """`bench regression --gates` writes gate.json and the manifest into the run dir: with
    the machine dir a link, refused in one line, the copy outside untouched."""
    config = _gated_run(store, tmp_path)
    outside, before = _linked_machine(store, tmp_path)

    code, out, err = bench("--store", str(store), "regression", "--gates", "--config", str(config))

    _refused(code, out, err)
    assert "gate.json" in err
    assert _snapshot(outside) == before


def test_apply_gates_writes_no_verdict_through_a_link(store: Path, tmp_path: Path) -> None:
    """The sweep's publish step and onboarding call the gates without the CLI's guarded
    store: the verdict's writes name their root themselves."""
    from benchlab.detect.gates import GATE_FILE, apply_gates
    from benchlab.sweep.config import load_sweep_config

    config = load_sweep_config(_gated_run(store, tmp_path))
    outside, before = _linked_machine(store, tmp_path)

    with pytest.raises(UnsafePathError, match=f"{GATE_FILE}.*symbolic link"):
        apply_gates(Store(store), experiment="linktest", config=config)
    assert _snapshot(outside) == before


def _git_repo(store: Path) -> Path:
    import subprocess

    repo = store.parent.parent
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True, timeout=60)
    return repo


def test_promote_never_replaces_its_public_copy_through_a_link(
    store: Path, tmp_path: Path, bench: Bench, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A committed link where the run's public copy goes: refused in one line, nothing
    removed or written where it points, nothing staged."""
    from tests.kit.runs import write_run

    _git_repo(store)
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    run_dir = write_run(store, machine_id="gpu1")
    outside = _outside(tmp_path)
    (outside / "kept.txt").write_text("not the store's\n")
    _link(store / "runs" / "public" / "gpu1" / run_dir.name, outside)

    code, out, err = bench("promote", run_dir.name)

    _refused(code, out, err)
    assert _written(outside) == ["kept.txt"]
    assert (outside / "kept.txt").read_text() == "not the store's\n"
    assert [p.name for p in (store / "runs" / "public" / "gpu1").iterdir()] == [run_dir.name]


@pytest.mark.parametrize("there", [True, False], ids=["target", "dangling"])
def test_install_merge_driver_writes_no_gitattributes_through_a_link(
    store: Path, tmp_path: Path, bench: Bench, there: bool
) -> None:
    """`.gitattributes` a committed link to a file outside the repository (or to where one
    would go): refused in one line, nothing written there, the link still a link. Its read
    refuses the link before the write (named from the repository root) is reached."""
    repo = _git_repo(store)
    target = _outside(tmp_path) / "attributes"
    if there:
        target.write_text("*.bin binary\n")
    (repo / ".gitattributes").symlink_to(target)

    code, out, err = bench("--store", str(store), "catalog", "install-merge-driver")

    _refused(code, out, err)
    assert target.read_text() == "*.bin binary\n" if there else not target.exists()
    assert (repo / ".gitattributes").is_symlink()
