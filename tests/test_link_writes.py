"""Writes routed through the guarded writer with their root (ARCHITECTURE.md, One reader and
one writer path): a committed link on the way to onboarding's files or to `bench schemas
--write`'s output is refused in one line, and nothing is written outside."""

from __future__ import annotations

import json
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
