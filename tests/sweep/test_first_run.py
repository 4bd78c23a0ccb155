"""The first-run template (ARCHITECTURE.md, The run files): `tools/bench_run.py --machine-id ID
--model M --precision P --config batch` runs one reference point without a sweep config."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchlab.cli import main

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_seed_spelling_runs_one_point(store: Path) -> None:
    env = {**os.environ, "BENCHLAB_STORE": str(store)}
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "tools" / "bench_run.py"),
            "--machine-id",
            "new-node-01",
            "--model",
            "tiny",
            "--precision",
            "q8",
            "--config",
            "batch",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "[  1/1] new-node-01 reference tiny q8" in done.stdout
    [record] = (store / "runs" / "by-machine" / "new-node-01").glob("*/record.json")
    data = json.loads(record.read_text())
    assert data["status"] == "ok" and data["experiment"] == "first-run-new-node-01"
    assert data["spec"]["mode"] == "batch"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give a sweep CONFIG, or --machine-id and --model"),
        (["--model", "tiny"], "give a sweep CONFIG, or --machine-id and --model"),
        (["x.yaml", "--machine-id", "a"], "either CONFIG or --machine-id/--model"),
    ],
)
def test_half_given_is_one_line(
    store: Path, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--store", str(store), "run", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
