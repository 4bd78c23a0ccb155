"""`bench run` against a store it cannot write: a real read-only bind mount, one line."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from tests.kit.configs import write_sweep
from tests.sweep.lab import ONE_ATTEMPT, command_params

from benchlab.cli import main


def test_a_sweep_into_a_read_only_store_is_one_line(
    tmp_path: Path, store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    path = write_sweep(
        tmp_path / "ro.yaml",
        experiment="ro",
        policies=ONE_ATTEMPT,
        matrix={"backend": "command", "params": command_params("print('{\"decode\": 1}')")},
    )
    mounted = 0
    try:
        for argv in (
            ["mount", "--bind", str(store), str(store)],
            ["mount", "-o", "remount,bind,ro", str(store)],
        ):
            try:
                subprocess.run(argv, check=True, capture_output=True, timeout=30)
            except (OSError, subprocess.CalledProcessError) as exc:
                pytest.skip(f"cannot mount here: {exc}")
            mounted += 1
        code = main(["run", str(path), "--quiet"])
        err = capsys.readouterr().err
        lines = err.strip().splitlines()
        assert code == 2 and "Traceback" not in err, err
        assert len(lines) == 1 and lines[0].startswith("bench: error: "), err
        assert str(store) in lines[0] and "Read-only file system" in lines[0]
    finally:
        for _ in range(mounted):
            subprocess.run(["umount", str(store)], check=False, capture_output=True, timeout=30)
    assert sorted(store.rglob("*")) == []
