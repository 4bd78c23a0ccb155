"""A sequential sweep (the scheduler, one point at a time): retries written down, resume
touches nothing done, stop, progress."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from tests.kit.backend import FakeBackend, envelope
from tests.kit.transport import FakeTransport
from tests.sweep.lab import lab_config

from benchlab.errors import DeviceError, StoreError
from benchlab.layout import Store
from benchlab.models import GitInfo
from benchlab.sweep.journal import SweepJournal
from benchlab.sweep.lock import SweepLock, request_stop
from benchlab.sweep.progress import LineProgress
from benchlab.sweep.scheduler import run_sweep

GIT = GitInfo(rev="abc1234", branch="main", dirty=False)


class Fleet:
    """One FakeTransport per device, created by the runner's opener seam."""

    def __init__(self) -> None:
        self.scripts: dict[str, list] = {}
        self.opened: list[str] = []
        self.transports: list[FakeTransport] = []

    def opener(self, device_id, config):
        self.opened.append(device_id)
        transport = FakeTransport(device_id, self.scripts.get(device_id, []))
        self.scripts[device_id] = transport.script  # shared: reopening continues the script
        self.transports.append(transport)
        return transport


def sweep(store: Path, config, fleet: Fleet, *, fresh=False, progress=None, sleeps=None):
    backend = FakeBackend()
    return run_sweep(
        Store(store),
        config,
        "lab.yaml",
        fresh=fresh,
        progress=progress,
        _transport_factory=fleet.opener,
        _backend=lambda name: backend,
        _sleep=(sleeps.append if sleeps is not None else lambda s: None),
        _git_info=GIT,
    )


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {
        p.relative_to(root).as_posix(): (p.stat().st_ino, p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        # sweeps/ (state, logs) and devices/ (the machines' appended history) are the
        # sweep's own bookkeeping; everything else is run dirs, which a resume must not touch
        if p.is_file() and "/sweeps/" not in p.as_posix() and "/devices/" not in p.as_posix()
    }


def test_all_ok_progress_lines_and_transport_reuse(store: Path) -> None:
    fleet = Fleet()
    lines: list[str] = []

    class Capture(LineProgress):
        def _print(self, line: str) -> None:
            lines.append(line)

    result = sweep(store, lab_config(), fleet, progress=Capture())
    assert len(result.records) == 4 and not result.failed and result.ok
    assert result.skipped == 0 and result.total == 4 and len(result.stamp) == 16
    assert lines[0] == (
        "[  1/4] laptop reference smollm2-135m f32 t4 p128/n64: prefill 56.8 t/s, decode 15.56 t/s"
    )
    assert len(lines) == 4
    assert fleet.opened == ["laptop", "pi5"]  # one transport per device, reused
    assert all(t.closed for t in fleet.transports)


def test_transport_retry_warning_and_retries_jsonl(store: Path) -> None:
    fleet = Fleet()
    fleet.scripts["pi5"] = [DeviceError("ssh dropped", "pi5")]
    sleeps: list[float] = []
    config = lab_config(policies={"retries": {"attempts": 3, "backoff_s": 2}})
    result = sweep(store, config, fleet, sleeps=sleeps)
    assert result.ok
    pi5 = [r for r in result.records if r.device == "pi5"]
    assert pi5[0].attempt == 2 and pi5[0].warnings == [
        "produced on attempt 2 of 3 after 1 transport failure(s) on pi5"
    ]
    assert pi5[1].attempt == 1 and pi5[1].warnings == []
    assert sleeps == [2.0]
    assert fleet.opened.count("pi5") == 2  # reopened after the failure
    lines = (store / "runs/sweeps/lab/retries.jsonl").read_text().splitlines()
    entry = json.loads(lines[0])
    assert len(lines) == 1 and entry["device"] == "pi5" and entry["action"] == "retry"


def test_retries_exhausted_and_non_transport_not_retried(store: Path) -> None:
    fleet = Fleet()
    fleet.scripts["pi5"] = [DeviceError("down", "pi5")] * 3
    fleet.scripts["laptop"] = [envelope("", exit_code=137, stderr="Killed")]
    result = sweep(store, lab_config(), fleet)
    kinds = [(r.device, r.status, r.failure_kind, r.attempt) for r in result.records]
    assert kinds == [
        ("laptop", "failed", "measurement", 1),
        ("laptop", "ok", None, 1),
        ("pi5", "failed", "transport", 3),
        ("pi5", "ok", None, 1),
    ]
    assert len(result.failed) == 2 and not result.ok
    retries = (store / "runs/sweeps/lab/retries.jsonl").read_text().splitlines()
    assert [json.loads(line)["action"] for line in retries] == ["retry", "retry", "gave-up"]


def test_resume_runs_exactly_the_not_ok_points_and_touches_nothing_else(store: Path) -> None:
    fleet = Fleet()
    fleet.scripts["pi5"] = [DeviceError("down", "pi5")] * 3
    first = sweep(store, lab_config(), fleet)
    failed_ids = {r.run_id for r in first.failed}
    assert len(failed_ids) == 1
    before = snapshot(store)
    again = Fleet()
    second = sweep(store, lab_config(), again)
    assert second.stamp == first.stamp and second.skipped == 3
    assert [r.run_id for r in second.records] == sorted(failed_ids) and second.ok
    after = snapshot(store)
    for path, stat in before.items():
        if not any(rid in path for rid in failed_ids):
            assert after[path] == stat, f"{path} was rewritten"
    third = sweep(store, lab_config(), Fleet())
    assert third.records == [] and third.skipped == 4 and third.ok
    assert snapshot(store) == after


def test_fresh_starts_new_ids(store: Path) -> None:
    first = sweep(store, lab_config(), Fleet())
    second = sweep(store, lab_config(), Fleet(), fresh=True)
    assert second.stamp > first.stamp and len(second.records) == 4
    assert {r.run_id for r in first.records}.isdisjoint(r.run_id for r in second.records)


def test_stop_request_leaves_the_rest_pending(store: Path) -> None:
    fleet = Fleet()
    config = lab_config()
    calls = {"n": 0}

    def stop_after_first(verb, payload):
        calls["n"] += 1
        if calls["n"] == 1:
            request_stop(Store(store), "lab")

    original = fleet.opener

    def opener(device_id, cfg):
        transport = original(device_id, cfg)
        transport.on_call = stop_after_first
        return transport

    fleet.opener = opener  # type: ignore[method-assign]
    result = sweep(store, config, fleet)
    assert result.stopped and len(result.records) == 1 and not result.ok
    assert not (store / "runs/sweeps/lab/stop").exists()
    journal = SweepJournal(Store(store), "lab")
    from benchlab.sweep.expand import expand

    assert len(journal.pending(expand(config))) == 3


def test_second_sweep_of_same_experiment_is_refused(store: Path) -> None:
    with SweepLock(Store(store), "lab"), pytest.raises(StoreError, match="already running"):
        sweep(store, lab_config(), Fleet())


def test_every_json_file_parses(store: Path) -> None:
    fleet = Fleet()
    fleet.scripts["laptop"] = [envelope("not json")]
    sweep(store, lab_config(), fleet)
    files = [p for p in store.rglob("*.json")]
    assert len(files) > 10
    for path in files:
        json.loads(path.read_text())
    assert not [p for p in store.rglob("*.tmp")]
    assert sorted(os.listdir(store / "runs" / "by-machine")) == ["laptop", "pi5"]
