"""The README's quick start for real, in a fresh clone of this repository's HEAD: `dvc repro`
runs the default sweep, builds the catalog, the charts and the site, and leaves
`git status --porcelain` empty (the demo machine `local` is never in git, nor is a catalog
until a named machine publishes one, nor DVC's per-clone dvc.lock).

A minute or two on 2 cores (the default sweep is 8 points). The clone uses this checkout's
interpreter with the clone's own sources first on the path, as an installed venv would."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("dvc") is None, reason="pip install -e '.[pipeline]'"),
]


def _run(cmd: list[str], cwd: Path, timeout: float = 600) -> str:
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "PYTHONPATH": str(cwd / "src")}
    env.pop("BENCHLAB_STORE", None)
    env.pop("BENCHLAB_START_METHOD", None)
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{cmd}: {done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def test_first_dvc_repro_of_a_fresh_clone_leaves_git_status_clean(tmp_path: Path) -> None:
    clone = tmp_path / "fresh"
    _run(["git", "clone", "-q", str(REPO), str(clone)], tmp_path)
    assert _run(["git", "status", "--porcelain"], clone) == ""
    assert not (clone / "experiments" / "benchmark" / "catalog.json").exists()

    out = _run(["dvc", "repro"], clone)
    assert "8 run(s) in " in out and ", 0 failed" in out, out
    assert "next:" not in out  # the catalog stage follows by itself inside `dvc repro`
    for stage in ("sweep", "catalog", "charts", "site"):
        assert f"Running stage '{stage}'" in out
    assert (clone / "site" / "build" / "index.html").is_file()
    store = clone / "experiments" / "benchmark"
    assert (store / "catalog.json").is_file() and (store / "catalog" / "local").is_dir()

    status = _run(["git", "status", "--porcelain", "--untracked-files=all"], clone)
    assert status == "", f"the quick start left git status dirty:\n{status}"
    # What a named machine would publish is not hidden: only `local` and the heads are.
    probe = ["git", "check-ignore", "-q", "experiments/benchmark/catalog/pi5/2026-W01.jsonl"]
    assert subprocess.run(probe, cwd=clone).returncode == 1

    # How close to the hardware (ARCHITECTURE.md): with this machine's bandwidth measured by
    # the probe, every run of the default sweep that can be judged has an MBU in (0, 100];
    # SmolLM2-135M's are judged (its weights leave the cache), tiny's are not (they fit in it).
    _run(["bench", "machines", "measure", "--machine-id", "local"], clone)
    rows = json.loads(_run(["bench", "table", "--format", "json"], clone))
    judged = {(r["model_id"], r["precision"], r["threads"]): r["mbu_pct"] for r in rows}
    assert len(judged) == 8, judged
    for (model, _, _), mbu in judged.items():
        if model == "tiny":
            assert mbu is None
        else:
            assert mbu is not None and 0 < mbu <= 100, judged
    # Its peak compute, measured by the same command (the agent's `gemm`: numpy's float32 GEMM,
    # the BLAS the reference decoder's prefill multiplies with), judges every run's prefill:
    # an MFU in (0, 100], tiny's too (FLOPs do not care about the cache).
    mfu = {(r["model_id"], r["precision"], r["threads"]): r["mfu_pct"] for r in rows}
    assert all(m is not None and 0 < m <= 100 for m in mfu.values()), mfu
