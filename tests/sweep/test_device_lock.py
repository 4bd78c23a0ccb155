"""Two experiments, one machine: never measured at once, never one run dir for both.

Before: two `bench run` of different experiments on one device ran side by side (each
measuring the other), and a point of the same spec started in the same second got the same
run id in both, so the second experiment overwrote the first one's run dirs.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.kit.configs import write_sweep
from tests.sweep.lab import ONE_ATTEMPT, command_params, spawn_bench_run

from benchlab.errors import StoreError
from benchlab.layout import RECORD, Store
from benchlab.models import SweepState
from benchlab.sweep import journal as journal_module
from benchlab.sweep.config import load_sweep_config
from benchlab.sweep.expand import expand
from benchlab.sweep.journal import SweepJournal
from benchlab.sweep.lock import DeviceLock, device_lock_path
from benchlab.sweep.scheduler import run_sweep

pytestmark = pytest.mark.integration

WAIT_S = 30.0


def sleeper(tmp_path: Path, experiment: str, sleep: float) -> Path:
    """Two command points (threads 1 and 2) on the one local device, each sleeping `sleep` s:
    long enough to be caught holding the device lock."""
    code = f"import time; time.sleep({sleep}); print('{{\"decode\": 5}}')"
    return write_sweep(
        tmp_path / f"{experiment}.yaml",
        experiment=experiment,
        policies=ONE_ATTEMPT,
        matrix={
            "backend": "command",
            "threads": [1, 2],
            "params": command_params(code, parser="json"),
        },
    )


def bench_run(path: Path, store: Path) -> subprocess.Popen[str]:
    """`bench run` in the background, its output kept as text for the refusal's message."""
    return spawn_bench_run(path, store, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def records(store: Path, experiment: str) -> dict[str, dict]:  # type: ignore[type-arg]
    found = {}
    for path in sorted(Store(store).by_machine.glob(f"local/*/{RECORD}")):
        data = json.loads(path.read_text())
        if data["experiment"] == experiment:
            found[data["run_id"]] = data
    return found


def run_files(store: Path) -> dict[Path, bytes]:
    by_machine = Store(store).by_machine
    return {path: path.read_bytes() for path in by_machine.glob("local/*/*") if path.is_file()}


def test_a_second_experiment_on_a_held_device_is_refused_naming_the_holder(
    tmp_path: Path, store: Path
) -> None:
    alpha = sleeper(tmp_path, "alpha", sleep=1.5)
    beta = sleeper(tmp_path, "beta", sleep=0)
    first = bench_run(alpha, store)
    lock = device_lock_path(Store(store), "local")
    deadline = time.monotonic() + WAIT_S
    while not lock.exists() and time.monotonic() < deadline and first.poll() is None:
        time.sleep(0.05)
    assert lock.exists(), "alpha never took the device lock"
    holder = json.loads(lock.read_text())
    assert holder["experiment"] == "alpha" and holder["pid"] == first.pid

    second = bench_run(beta, store)
    _, err = second.communicate(timeout=WAIT_S)
    assert second.returncode != 0
    lines = [line for line in err.splitlines() if "alpha" in line]
    assert len(lines) == 1, err
    assert "machine 'local' is being measured by experiment 'alpha'" in lines[0]
    assert f"pid {first.pid}" in lines[0] and "bench stop alpha" in lines[0]
    assert not (Store(store).sweep_dir("beta") / "state.json").exists()  # refused: no stamp

    _, err = first.communicate(timeout=WAIT_S * 2)
    assert first.returncode == 0, err
    assert not lock.exists()
    alpha_records = records(store, "alpha")
    assert len(alpha_records) == 2

    again = bench_run(beta, store)
    _, err = again.communicate(timeout=WAIT_S * 2)
    assert again.returncode == 0, err
    assert records(store, "alpha") == alpha_records  # untouched
    assert len(records(store, "beta")) == 2


def test_a_resumed_stamp_that_names_another_experiments_run_dirs_is_refused(
    tmp_path: Path, store: Path
) -> None:
    alpha = sleeper(tmp_path, "alpha", sleep=0)
    beta = sleeper(tmp_path, "beta", sleep=0)
    done = bench_run(alpha, store)
    _, err = done.communicate(timeout=WAIT_S * 2)
    assert done.returncode == 0, err
    before = run_files(store)
    # beta started in the same second as alpha: its state holds alpha's stamp.
    stamp = SweepJournal(Store(store), "alpha").stamp
    state = Store(store).sweep_dir("beta") / "state.json"
    state.parent.mkdir(parents=True)
    state.write_text(
        SweepState(
            experiment="beta", stamp=stamp, started_at="2026-01-01T00:00:00Z"
        ).model_dump_json(by_alias=True)
    )
    second = bench_run(beta, store)
    _, err = second.communicate(timeout=WAIT_S)
    assert second.returncode != 0
    assert "experiment 'alpha'" in err and "would overwrite it" in err and "--fresh" in err
    after = run_files(store)
    assert after == before
    assert not device_lock_path(Store(store), "local").exists()


def test_a_new_stamp_in_the_same_second_moves_on_instead_of_overwriting(
    tmp_path: Path, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    alpha = load_sweep_config(sleeper(tmp_path, "alpha", sleep=0))
    beta = load_sweep_config(sleeper(tmp_path, "beta", sleep=0))
    assert [s.spec_id for s in expand(alpha)] == [s.spec_id for s in expand(beta)]
    first = run_sweep(store, alpha, None)
    assert first.ok
    real = journal_module.sweep_stamp
    calls: list[str] = []

    def same_second(moment: object = None) -> str:
        calls.append("x")
        return first.stamp if len(calls) == 1 else real(moment)  # type: ignore[arg-type]

    monkeypatch.setattr(journal_module, "sweep_stamp", same_second)
    before = records(store, "alpha")
    second = run_sweep(store, beta, None)
    assert second.ok and second.stamp > first.stamp
    assert records(store, "alpha") == before
    assert len(records(store, "beta")) == 2


def test_a_stale_device_lock_of_a_dead_process_is_taken_over(store: Path) -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    path = device_lock_path(Store(store), "local")
    path.parent.mkdir(parents=True)
    path.write_text(
        json.dumps({"pid": int(dead.stdout), "host": socket.gethostname(), "experiment": "x"})
    )
    lock = DeviceLock(Store(store), "local", "alpha")
    lock.acquire()
    try:
        assert "took over a stale lock of machine 'local'" in lock.warnings[0]
        assert json.loads(path.read_text())["experiment"] == "alpha"
    finally:
        lock.release()
    path.write_text(json.dumps({"pid": 1, "host": "elsewhere.invalid", "experiment": "x"}))
    with pytest.raises(StoreError, match="being measured by experiment 'x'"):
        DeviceLock(Store(store), "local", "alpha").acquire()
