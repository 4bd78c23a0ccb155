"""`dvc repro` for real, in a temporary clone of this repository's HEAD: the committed
dvc.yaml, params.yaml and .dvc/ run a sweep on this machine and build the catalog; a second
repro does nothing; a new point in the sweep re-runs only that point.

`dvc repro catalog` reproduces the catalog and what it depends on (the sweep); the later
stages (charts, site) have their own tests."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from tests.kit.catalog import catalog_doc
from tests.kit.configs import write_sweep
from tests.sweep.lab import ONE_ATTEMPT, command_params

REPO = Path(__file__).resolve().parents[2]


def write_tiny(path: Path, threads: int | list[int] = 1) -> Path:
    """The `tiny` sweep: the reference backend's tiny model at f32 and q8, in seconds."""
    return write_sweep(
        path,
        experiment="tiny",
        matrix={
            "precision": ["f32", "q8"],
            "threads": threads,
            "prompt_tokens": 16,
            "gen_tokens": 4,
            "batch_sizes": [1, 2],
            "params": {"reps": 1, "batch_steps": 2},
        },
    )


pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("dvc") is None, reason="dvc is not installed"),
]


def run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "PYTHONPATH": str(cwd / "src")}
    env.pop("BENCHLAB_STORE", None)
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{cmd}: {done.stdout}\n{done.stderr}"
    return done


def test_dvc_repro_in_a_fresh_clone(tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    run(["git", "clone", "-q", str(REPO), str(clone)], tmp_path)
    assert "analytics = false" in (clone / ".dvc" / "config").read_text()
    sweep = clone / "experiments" / "sweeps" / "tiny.yaml"
    write_tiny(sweep)
    params = clone / "params.yaml"
    params.write_text(
        params.read_text().replace("experiments/sweeps/local.yaml", "experiments/sweeps/tiny.yaml")
    )

    # The tracked catalog of a fresh clone lists a run made on another machine; its run dir
    # is not here. DVC deletes a stage's non-persistent outputs before running it, so only a
    # persisted catalog.json lets the union keep that run.
    other = {
        "run_id": "pi5-tiny-f32-batch-0badc0de-20250101T000000Z",
        "machine_id": "pi5",
        "timestamp": "2025-01-01T00:00:00Z",
        "model": "tiny",
        "model_id": "tiny",
        "precision": "f32",
        "status": "ok",
        "tags": [],
        "peak_tok_per_sec": 1.0,
        "path": "runs/by-machine/pi5/pi5-tiny-f32-batch-0badc0de-20250101T000000Z/",
    }
    catalog_path = clone / "experiments" / "benchmark" / "catalog.json"
    catalog_path.write_text(
        json.dumps(
            {
                "$schema": "benchmark/catalog.v1",
                "version": "1.0",
                "machines": {},
                "runs": [other],
                "index": {
                    "by_model": {"tiny": [other["run_id"]]},
                    "by_precision": {"f32": [other["run_id"]]},
                    "by_date": {"2025-01-01": [other["run_id"]]},
                },
                "last_updated": other["timestamp"],
            }
        )
    )

    # Written by an older benchlab as one file: upgraded once to the sharded format, which
    # every reader and the build then require.
    run(["bench", "catalog", "upgrade"], clone)

    first = run(["dvc", "repro", "catalog"], clone)
    assert "Running stage 'sweep'" in first.stdout and "Running stage 'catalog'" in first.stdout
    assert "2 run(s) in " in first.stdout
    machine = clone / "experiments" / "benchmark" / "runs" / "by-machine" / "local"
    runs = sorted(p.name for p in machine.iterdir() if p.is_dir())
    catalog = catalog_doc(clone / "experiments" / "benchmark" / "catalog.json")
    assert sorted(e["run_id"] for e in catalog["runs"] if e["machine_id"] == "local") == runs
    assert len(runs) == 2
    assert other["run_id"] in {e["run_id"] for e in catalog["runs"]}, "the union lost a run"
    assert (clone / "dvc.lock").is_file()
    mtimes = {p: p.stat().st_mtime_ns for p in machine.rglob("*") if p.is_file()}

    second = run(["dvc", "repro", "catalog"], clone)
    assert "Running stage" not in second.stdout
    assert "up to date" in second.stdout

    write_tiny(sweep, threads=[1, 2])
    third = run(["dvc", "repro", "catalog"], clone)
    assert "2 of 4 point(s) already done, 2 to run" in third.stdout
    assert len([p for p in machine.iterdir() if p.is_dir()]) == 4
    for path, mtime in mtimes.items():
        assert path.stat().st_mtime_ns == mtime, f"{path} was rewritten"
    catalog = catalog_doc(clone / "experiments" / "benchmark" / "catalog.json")
    assert len(catalog["runs"]) == 5


FLAKY_CODE = "import json, sys; print(json.dumps(dict(decode=1))); sys.exit('{precision}' == 'q8')"


def test_dvc_repro_concurrent_with_a_failed_point_goes_on_unless_asked(tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    run(["git", "clone", "-q", str(REPO), str(clone)], tmp_path)
    sweep = clone / "experiments" / "sweeps" / "flaky.yaml"
    write_sweep(
        sweep,
        experiment="flaky",
        policies=ONE_ATTEMPT,
        matrix={
            "backend": "command",
            "precision": ["f32", "q8"],
            "params": command_params(FLAKY_CODE),
        },
    )
    params = clone / "params.yaml"
    text = params.read_text().replace(
        "experiments/sweeps/local.yaml", str(sweep.relative_to(clone))
    )
    params.write_text(text.replace("concurrent: false", "concurrent: true"))

    first = run(["dvc", "repro", "catalog"], clone)
    assert "bench run experiments/sweeps/flaky.yaml --concurrent" in first.stdout
    assert "FAILED 1 point(s)" in first.stdout and "Running stage 'catalog'" in first.stdout
    catalog = catalog_doc(clone / "experiments" / "benchmark" / "catalog.json")
    local = [e for e in catalog["runs"] if e["machine_id"] == "local"]
    assert sorted(e["status"] for e in local) == ["failed", "ok"]

    params.write_text(params.read_text().replace("fail-on-error: false", "fail-on-error: true"))
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "PYTHONPATH": str(clone / "src")}
    env.pop("BENCHLAB_STORE", None)
    gate = subprocess.run(
        ["dvc", "repro", "catalog"], cwd=clone, env=env, capture_output=True, text=True, timeout=300
    )
    assert gate.returncode != 0, gate.stdout
    assert "--fail-on-error" in gate.stdout and "Running stage 'catalog'" not in gate.stdout
