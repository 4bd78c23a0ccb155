"""`bench run` end to end on this machine: the real agent, LocalTransport and backends."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from tests.kit.configs import write_sweep
from tests.sweep.lab import ONE_ATTEMPT, command_params

from benchlab.cli import main
from benchlab.ids import slug

REPO = Path(__file__).resolve().parents[2]

CLITEST_CODE = (
    "import json, sys; t = {threads}; print(json.dumps(dict(decode=10 + t))); sys.exit(FAIL)"
)


def config(tmp_path: Path, fail: str = "0", python: str = "{python}") -> Path:
    """Four command points (f32/q8 x 1/2 threads) that report 10 + threads; `fail` is the
    exit status expression, `python` the interpreter the device is asked for."""
    return write_sweep(
        tmp_path / "clitest.yaml",
        experiment="clitest",
        policies=ONE_ATTEMPT,
        matrix={
            "backend": "command",
            "precision": ["f32", "q8"],
            "threads": [1, 2],
            "params": command_params(CLITEST_CODE.replace("FAIL", fail), python=python),
        },
    )


@pytest.fixture
def env(store: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    return store


def files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


def test_dry_run_lists_points_and_writes_nothing(tmp_path: Path, env: Path, capsys) -> None:
    path = config(tmp_path)
    assert main(["run", str(path), "--dry-run"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "clitest (new sweep): 4 point(s), 0 done, 4 to run"
    assert out[1].startswith("[1] pending local command tiny f32 t1  local-tiny-f32-batch-")
    assert files(env) == []
    assert main(["run", str(path), "--dry-run", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["total"] == 4 and data["pending"] == 4 and data["stamp"] is None
    assert files(env) == []


def test_run_then_resume_then_dry_run_shows_done(tmp_path: Path, env: Path, capsys) -> None:
    path = config(tmp_path)
    assert main(["run", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("[  1/4] local command tiny f32 t1: decode 11.00 t/s")
    assert out[3].startswith("[  4/4] local command tiny q8 t2: decode 12.00 t/s")
    assert out[4].startswith("4 run(s) in ") and out[4].endswith(", 0 failed")
    assert "bench catalog build" in out[-1]
    runs = sorted(p for p in (env / "runs" / "by-machine" / "local").iterdir() if p.is_dir())
    assert len(runs) == 4
    before = files(env)
    assert main(["run", str(path)]) == 0
    out = capsys.readouterr().out
    assert "4 of 4 point(s) already done, 0 to run" in out and "0 run(s) in" in out
    assert files(env) == before
    assert main(["run", str(path), "--dry-run"]) == 0
    listing = capsys.readouterr().out.splitlines()
    assert listing[0].endswith("4 point(s), 4 done, 0 to run")
    assert all(" done " in line for line in listing[1:])


@pytest.mark.slow
def test_inside_dvc_repro_the_sweep_gives_no_next_hint(
    tmp_path: Path, env: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DVC sets DVC_STAGE for a stage's command; the catalog stage follows by itself."""
    monkeypatch.setenv("DVC_STAGE", "sweep")
    assert main(["run", str(config(tmp_path))]) == 0
    out = capsys.readouterr().out
    assert "4 run(s) in " in out and "next:" not in out and "catalog build" not in out


def test_failed_points_exit_0_unless_fail_on_error_and_json_output(
    tmp_path: Path, env: Path, capsys
) -> None:
    # A failed point is a result, recorded loudly: the sweep itself succeeded (exit 0), so
    # `dvc repro` goes on to the catalog; --fail-on-error is how a gate asks for exit 1.
    path = config(tmp_path, fail="1 if t == 2 else 0")
    assert main(["run", str(path), "--format", "json"]) == 0
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert data["ran"] == 4 and data["failed"] == 2
    failed = [r for r in data["records"] if r["status"] == "failed"]
    assert {r["failure_kind"] for r in failed} == {"measurement"}
    assert "FAILED (measurement): " in captured.err and "FAILED 2 point(s)" in captured.err
    assert "to retry them" in captured.err
    assert main(["run", str(path), "--fail-on-error"]) == 1
    assert "FAILED 2 point(s)" in capsys.readouterr().out


def test_missing_backend_binary_is_exit_2_and_writes_nothing(
    tmp_path: Path, env: Path, capsys
) -> None:
    assert main(["run", str(config(tmp_path, python="no-such-bench-binary"))]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "clitest.yaml: matrix.backend: command cannot run tiny f32 on device 'local'" in err
    assert "no-such-bench-binary" in err
    assert files(env) == []


@pytest.mark.slow
def test_quiet_and_the_tools_shim(tmp_path: Path, env: Path) -> None:
    path = config(tmp_path)
    done = subprocess.run(
        [sys.executable, str(REPO / "tools" / "bench_run.py"), str(path), "--quiet"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("4 run(s) in ") and "[" not in done.stdout


def test_reference_backend_tiny_point(tmp_path: Path, env: Path, capsys) -> None:
    path = write_sweep(
        tmp_path / "ref.yaml",
        experiment="ref",
        matrix={
            "precision": "q8",
            "threads": 1,
            "prompt_tokens": 16,
            "gen_tokens": 4,
            "batch_sizes": [1, 2],
            "params": {"reps": 1, "batch_steps": 2},
        },
    )
    assert main(["run", str(path)]) == 0
    line = capsys.readouterr().out.splitlines()[0]
    assert line.startswith("[  1/1] local reference tiny q8 t1 p16/n4: prefill ")
    (run,) = [p for p in (env / "runs" / "by-machine" / "local").iterdir() if p.is_dir()]
    manifest = json.loads((run / "manifest.json").read_text())
    record = json.loads((run / "record.json").read_text())
    assert record["status"] == "ok" and record["metrics"]["decode_tok_per_sec"] > 0
    assert slug(manifest["model"]["name"]) == "tiny"
    assert sorted(p.name for p in run.iterdir()) == [
        "README.md",
        "batch.json",
        "kernel.json",
        "manifest.json",
        "raw",
        "record.json",
    ]
