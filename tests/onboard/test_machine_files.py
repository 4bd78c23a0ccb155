"""The machine files (ARCHITECTURE.md, Machines): .bench-machine-id, machines/<id>/history/, the
smoke run's README.md; and the first-run template that needs no --machine-id after onboarding."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchlab.cli import main
from benchlab.layout import Store, atomic_write_json, read_json


@pytest.mark.slow
def test_onboarding_writes_the_machine_files_and_first_runs_use_the_id(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    repo = store.parent.parent
    assert main(["onboard", "--machine-id", "box1", "--tags", "cpu"]) == 0
    assert (repo / ".bench-machine-id").read_text() == "box1\n"
    layout = Store(store)
    history = sorted((layout.public_specs("box1").parent / "history").glob("*.json"))
    assert len(history) == 1 and read_json(history[0]) == read_json(layout.public_specs("box1"))
    [smoke] = [p for p in layout.by_machine.glob("box1/*/") if (p / "record.json").is_file()]
    readme = (smoke / "README.md").read_text()
    assert readme.startswith(f"# {smoke.name}\n") and "smoke run of machine `box1`" in readme
    assert "- [x] Smoke benchmark completes without error" in readme

    # Re-onboarding without --machine-id: the id file names the machine; unchanged specs
    # add no history.
    assert main(["onboard", "--no-smoke"]) == 0
    assert len(list(history[0].parent.glob("*.json"))) == 1
    capsys.readouterr()

    # The first-run template (ARCHITECTURE.md, The run files), minus --machine-id.
    assert main(["run", "--model", "tiny", "--precision", "f32", "-q"]) == 0
    assert list(layout.by_machine.glob("box1/box1-tiny-f32-batch-*/record.json"))
    assert (layout.sweep_dir("first-run-box1") / "state.json").is_file()


def test_changed_specs_are_kept_in_history(store: Path) -> None:
    from benchlab.machines.onboard import record_specs_history

    layout = Store(store)
    public = layout.public_specs("box1")
    atomic_write_json(public, {"machine_id": "box1", "hardware": {"ram_gb": 8}})
    first = record_specs_history(layout, "box1", stamp="20260101T000000Z")
    assert first is not None and first.name == "20260101T000000Z.json"
    assert record_specs_history(layout, "box1", stamp="20260102T000000Z") is None
    atomic_write_json(public, {"machine_id": "box1", "hardware": {"ram_gb": 16}})
    second = record_specs_history(layout, "box1", stamp="20260103T000000Z")
    assert second is not None and read_json(second)["hardware"]["ram_gb"] == 16
    assert [p.name for p in sorted(first.parent.iterdir())] == [
        "20260101T000000Z.json",
        "20260103T000000Z.json",
    ]


def test_a_bad_machine_id_file_is_named(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    (store.parent.parent / ".bench-machine-id").write_text("../etc\n")
    assert main(["run", "--model", "tiny"]) == 2
    err = capsys.readouterr().err
    assert ".bench-machine-id" in err and "re-run `bench onboard`" in err


def test_a_remote_onboarding_leaves_the_clone_id_alone(store: Path, tmp_path: Path) -> None:
    import sys

    import yaml

    config = tmp_path / "lab.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "experiment": "lab",
                "devices": {
                    "pod": {"transport": "exec", "command": ["env"], "python": sys.executable}
                },
                "matrix": {"backend": "reference", "model": "tiny", "precision": "f32"},
            }
        )
    )
    code = main(
        ["--store", str(store), "onboard", "--device", "pod", "--config", str(config), "--no-smoke"]
    )
    assert code == 0
    assert not (store.parent.parent / ".bench-machine-id").exists()
