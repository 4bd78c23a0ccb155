"""Kill `bench run` with SIGKILL at random moments, then resume: every point ends up exactly
once ok, there are no duplicate run dirs, and no JSON file is ever half-written."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest
from tests.kit.configs import write_sweep
from tests.sweep.lab import ONE_ATTEMPT, command_params, spawn_bench_run

from benchlab.layout import Store
from benchlab.sweep.config import load_sweep_config
from benchlab.sweep.expand import expand
from benchlab.sweep.journal import SweepJournal

SNIPPET = (
    "import json, random, time; time.sleep(random.uniform(0.1, 0.3)); "
    "print(json.dumps(dict(decode={threads})))"
)
KILLS = 6


@pytest.mark.integration
def test_sigkill_at_random_moments_then_resume(tmp_path: Path, store: Path) -> None:
    path = write_sweep(
        tmp_path / "killtest.yaml",
        experiment="killtest",
        policies=ONE_ATTEMPT,
        matrix={
            "backend": "command",
            "precision": ["f32", "q8"],
            "threads": list(range(1, 9)),
            "params": command_params(SNIPPET),
        },
    )
    specs = expand(load_sweep_config(path))
    rng = random.Random(20250106)
    killed = 0
    finished_early = False
    while killed < KILLS and not finished_early:
        process = spawn_bench_run(path, store, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(rng.uniform(0.2, 1.5))
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            killed += 1
        else:
            finished_early = True  # nothing left to kill: the resume below must be a no-op
        process.wait(timeout=60)
        process.stderr.close()  # type: ignore[union-attr]
    assert killed >= 3, f"the sweep finished after {killed} kill(s); slow the command down"

    final = spawn_bench_run(path, store, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, err = final.communicate(timeout=240)
    assert final.returncode == 0, err.decode()

    journal = SweepJournal(Store(store), "killtest")
    assert journal.read_state() is not None
    machine_dir = store / "runs" / "by-machine" / "local"
    run_dirs = sorted(p.name for p in machine_dir.iterdir() if p.is_dir())
    assert run_dirs == sorted(journal.run_id(spec) for spec in specs)  # exactly once each
    for spec in specs:
        record = json.loads((journal.run_dir(spec) / "record.json").read_text())
        assert record["status"] == "ok", record
        assert not list(journal.run_dir(spec).rglob("*.tmp"))
    documents = list(store.rglob("*.json"))
    assert len(documents) >= 4 * len(specs)
    for document in documents:
        json.loads(document.read_text(encoding="utf-8"))  # never half-written
