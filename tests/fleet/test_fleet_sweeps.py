"""Concurrent sweeps over real sshd hosts that fail: groups, cuts, drains, kills, clocks.

Every point runs the `command` backend through the real agent on a fleet host: a short
sleep, then one JSON line the parser reads. Breaker timings are short (seconds) and every
wait is bounded, so the module finishes in well under a minute on two cores.
"""

from __future__ import annotations

import glob
import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from fleet_hosts import Fleet
from tests.kit.configs import sweep_dict
from tests.kit.scheduler import Events

from benchlab.layout import Store
from benchlab.models import RunRecord, SweepConfig
from benchlab.sweep.attempt import HOLE_WARNING, retry_warning
from benchlab.sweep.config import parse_sweep_config
from benchlab.sweep.expand import expand
from benchlab.sweep.journal import SweepJournal
from benchlab.sweep.result import SweepResult
from benchlab.sweep.schedule_log import read_retries
from benchlab.sweep.scheduler import run_sweep_concurrent

pytestmark = pytest.mark.integration

SWEEP_LIMIT_S = 90.0


def points(count: int, seconds: float) -> list[dict[str, Any]]:
    """`count` distinct command points that each sleep `seconds` and report a rate."""
    report = json.dumps({"decode": 10.0})
    return [
        {
            "argv": ["/bin/sh", "-c", f"sleep {seconds}; echo '{report}'"],
            "fields": {"decode": "decode"},
            "point": index,
        }
        for index in range(count)
    ]


def make_config(
    fleet: Fleet,
    experiment: str,
    devices: dict[str, dict[str, Any]],
    *,
    count: int,
    seconds: float,
    retries: dict[str, Any] | None = None,
    breaker: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return sweep_dict(
        experiment=experiment,
        devices={name: fleet.device(name, **extra) for name, extra in devices.items()},
        policies={
            "retries": retries or {"attempts": 3, "backoff_s": 0.1},
            "breaker": breaker
            or {"failure_threshold": 3, "recovery_after_s": 2, "drain_after_cooldowns": 2},
        },
        matrix={
            "device": list(devices),
            "backend": "command",
            "model": "sleeper",
            "params": points(count, seconds),
        },
    )


def in_background(work: Callable[[], SweepResult]) -> tuple[threading.Thread, dict[str, Any]]:
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = work()
        except BaseException as exc:  # surfaced by finish()
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, box


def finish(thread: threading.Thread, box: dict[str, Any]) -> SweepResult:
    thread.join(SWEEP_LIMIT_S)
    assert not thread.is_alive(), f"sweep still running after {SWEEP_LIMIT_S}s"
    if "error" in box:
        raise box["error"]
    return box["result"]


def wait_for(what: str, predicate: Callable[[], bool], limit: float = 30.0) -> None:
    deadline = time.monotonic() + limit
    while not predicate():
        assert time.monotonic() < deadline, f"waited {limit}s for {what}"
        time.sleep(0.05)


def records_on_disk(store: Path) -> dict[str, RunRecord]:
    found = {}
    for path in (store / "runs" / "by-machine").glob("*/*/record.json"):
        record = RunRecord.model_validate_json(path.read_text())
        found[record.run_id] = record
    return found


def ok_on(store: Path, device: str) -> int:
    return sum(
        1 for r in records_on_disk(store).values() if r.device == device and r.status == "ok"
    )


def envelope_span(store: Path, record: RunRecord) -> tuple[float, float]:
    """The device-side start and finish of a point (float seconds, from raw/envelope.json)."""
    path = store / "runs" / "by-machine" / record.machine_id / record.run_id / "raw"
    envelope = json.loads((path / "envelope.json").read_text())
    return envelope["started_at"], envelope["finished_at"]


def record_bytes(store: Path, records: list[RunRecord]) -> dict[str, bytes]:
    base = store / "runs" / "by-machine"
    return {
        r.run_id: (base / r.machine_id / r.run_id / "record.json").read_bytes() for r in records
    }


def sweep_dir(store: Path, experiment: str) -> Path:
    return store / "runs" / "sweeps" / experiment


# --- a group of two hosts and one host alone ---------------------------------------------


def test_group_members_never_overlap_and_take_turns(fleet: Fleet, store: Path) -> None:
    config = parse_sweep_config(
        make_config(
            fleet,
            "group",
            {"h0": {"resource_group": "shared"}, "h1": {"resource_group": "shared"}, "h2": {}},
            count=3,
            seconds=0.4,
        )
    )
    result = run_sweep_concurrent(store, config, None, progress=Events())
    assert len(result.records) == 9
    assert not result.failed, [r.error for r in result.failed]

    group = sorted(
        (r for r in result.records if r.device in ("h0", "h1")),
        key=lambda r: envelope_span(store, r),
    )
    spans = [envelope_span(store, r) for r in group]
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert end <= start, f"group points overlap: {spans}"
    stamps = sorted((r.timings.started_at, r.timings.finished_at) for r in group)
    for (_, end), (start, _) in itertools.pairwise(stamps):
        assert end is not None and start is not None and end <= start, stamps
    turns = [r.device for r in group]
    assert all(a != b for a, b in itertools.pairwise(turns)), f"not round robin: {turns}"

    alone = [envelope_span(store, r) for r in result.records if r.device == "h2"]
    overlapping = [
        1 for a0, a1 in alone for g0, g1 in spans if a0 < g1 and g0 < a1
    ]  # the lone host ran alongside the group: the sweep really was concurrent
    assert overlapping
    schedule = json.loads((sweep_dir(store, "group") / "schedule.json").read_text())
    assert schedule["groups"]["shared"]["members"] == ["h0", "h1"]


# --- a link cut for a few seconds ----------------------------------------------------------


def test_short_cut_opens_the_breaker_and_the_probe_brings_it_back(
    needs_cut: Fleet, store: Path
) -> None:
    fleet = needs_cut
    attempts = 8
    config = parse_sweep_config(
        make_config(
            fleet,
            "shortcut",
            {"h0": {}, "h3": {"connect_timeout_s": 2}},
            count=5,
            seconds=0.5,
            retries={"attempts": attempts, "backoff_s": 0.1},
            breaker={"failure_threshold": 2, "recovery_after_s": 2, "drain_after_cooldowns": 10},
        )
    )
    progress = Events()
    thread, box = in_background(
        lambda: run_sweep_concurrent(store, config, None, progress=progress)
    )
    try:
        wait_for("a first point on h3", lambda: ok_on(store, "h3") >= 1)
        fleet.cut("h3")
        # Down long enough for the breaker to open, back before its recovery probe.
        wait_for("the breaker to open", lambda: bool(progress.saw("DOWN h3")))
        time.sleep(0.5)
    finally:
        fleet.restore("h3")
    result = finish(thread, box)

    assert len(result.records) == 10
    assert not result.failed, [r.error for r in result.failed]
    assert progress.saw("DOWN h3 taken out of service after 2 transport failures")
    assert progress.saw("UP h3 answered its recovery probe")

    h3 = [r for r in result.records if r.device == "h3"]
    failures = sum(r.attempt - 1 for r in h3)
    lines = [x for x in read_retries(sweep_dir(store, "shortcut") / "retries.jsonl")]
    transport = [x for x in lines if x["kind"] == "transport"]
    assert failures >= 2
    assert len(transport) == failures, (transport, [(r.run_id, r.attempt) for r in h3])
    assert {x["device"] for x in transport} == {"h3"}
    assert {x["action"] for x in transport} == {"retry"}
    for record in result.records:
        if record.attempt > 1:
            assert record.warnings == [retry_warning(record.attempt, attempts, "h3")]
        else:
            assert record.warnings == []
    schedule = json.loads((sweep_dir(store, "shortcut") / "schedule.json").read_text())
    breaker = schedule["devices"]["h3"]["breaker"]
    assert breaker["state"] == "closed"
    assert breaker["trips"] and "closed_at" in breaker["trips"][0]
    assert schedule["devices"]["h0"]["breaker"]["trips"] == []


# --- a link cut for good -------------------------------------------------------------------


def test_host_cut_for_good_is_drained_and_resume_measures_exactly_the_holes(
    needs_cut: Fleet, store: Path
) -> None:
    fleet = needs_cut
    config = parse_sweep_config(
        make_config(
            fleet,
            "drain",
            {"h0": {}, "h1": {}, "h3": {"connect_timeout_s": 2}},
            count=5,
            seconds=0.3,
            retries={"attempts": 5, "backoff_s": 0.1},
            breaker={"failure_threshold": 1, "recovery_after_s": 1, "drain_after_cooldowns": 2},
        )
    )
    progress = Events()
    thread, box = in_background(
        lambda: run_sweep_concurrent(store, config, None, progress=progress)
    )
    try:
        wait_for("a first point on h3", lambda: ok_on(store, "h3") >= 1)
        fleet.cut("h3")
        result = finish(thread, box)
    except BaseException:
        fleet.restore("h3")
        raise

    others = [r for r in result.records if r.device != "h3"]
    assert len(others) == 10 and all(r.status == "ok" for r in others)
    assert progress.saw("DRAIN h3")
    h3 = [r for r in result.records if r.device == "h3"]
    assert len(h3) == 5
    measured = [r for r in h3 if r.status == "ok"]
    missing = [r for r in h3 if r.status != "ok"]
    holes = [r for r in missing if r.attempt == 0]
    assert measured and holes
    for hole in holes:
        assert hole.error and hole.error.startswith("not attempted: device 'h3'")
        assert hole.error.endswith("Re-run to retry this point.")
        assert hole.warnings == [HOLE_WARNING]
    for tried in set(map(id, missing)) - set(map(id, holes)):
        record = next(r for r in missing if id(r) == tried)
        assert record.failure_kind == "transport"  # attempted, failed: kept as it is
    lines = read_retries(sweep_dir(store, "drain") / "retries.jsonl")
    assert {x["run_id"] for x in lines if x["kind"] == "hole"} >= {h.run_id for h in holes}

    before = record_bytes(store, [r for r in result.records if r.status == "ok"])
    fleet.restore("h3")
    again = run_sweep_concurrent(store, config, None, progress=Events())
    assert sorted(r.run_id for r in again.records) == sorted(r.run_id for r in missing)
    assert all(r.status == "ok" for r in again.records)
    assert again.skipped == 15 - len(missing)
    assert record_bytes(store, [r for r in result.records if r.status == "ok"]) == before


# --- the controller killed mid-sweep -------------------------------------------------------


def test_controller_killed_mid_sweep_resumes_without_duplicates(
    fleet: Fleet, store: Path, tmp_path: Path
) -> None:
    data = make_config(fleet, "killed", {"h0": {}, "h1": {}, "h2": {}}, count=4, seconds=0.5)
    path = tmp_path / "killed.yaml"
    path.write_text(yaml.safe_dump(data))
    env = {**os.environ, "BENCHLAB_STORE": str(store)}
    process = subprocess.Popen(
        [sys.executable, "-m", "benchlab", "run", str(path), "--concurrent", "-q"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        wait_for(
            "three points done by the controller",
            lambda: (
                sum(r.status == "ok" for r in records_on_disk(store).values()) >= 3
                or process.poll() is not None
            ),
            limit=60,
        )
        assert process.poll() is None, process.stderr.read() if process.stderr else ""
    finally:
        with_group = process.pid
        try:
            os.killpg(with_group, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait(timeout=10)
        if process.stderr:
            process.stderr.close()
    assert process.returncode == -signal.SIGKILL

    done_before = {k: r for k, r in records_on_disk(store).items() if r.status == "ok"}
    before = record_bytes(store, list(done_before.values()))
    assert 3 <= len(done_before) < 12

    config = parse_sweep_config(data)
    result = run_sweep_concurrent(store, config, str(path), progress=Events())
    assert result.skipped == len(done_before)
    assert len(result.records) == 12 - len(done_before)
    assert all(r.status == "ok" for r in result.records)
    assert any("stale lock" in w for w in result.warnings)

    journal = SweepJournal(Store(store), "killed")
    journal.begin(False, None)
    expected = {journal.run_id(spec) for spec in expand(config)}
    run_dirs = [p.name for p in (store / "runs" / "by-machine").glob("*/*") if p.is_dir()]
    assert sorted(run_dirs) == sorted(expected), "a point ran twice or under another id"
    on_disk = records_on_disk(store)
    assert set(on_disk) == expected and all(r.status == "ok" for r in on_disk.values())
    assert record_bytes(store, list(done_before.values())) == before


# --- clocks ----------------------------------------------------------------------------------


def faketime_library() -> str | None:
    found = sorted(glob.glob("/usr/lib/*/faketime/libfaketime.so.1"))
    return found[0] if found else None


def test_clock_offsets_are_reported_within_their_uncertainty(fleet: Fleet, store: Path) -> None:
    library = faketime_library()
    if library is None:
        pytest.skip("libfaketime is not installed (Debian package faketime)")
    offset = 30.0
    skewed = {
        "env": {
            "LD_PRELOAD": library,
            "FAKETIME": f"+{offset:g}s",
            "FAKETIME_DONT_FAKE_MONOTONIC": "1",
        }
    }
    config: SweepConfig = parse_sweep_config(
        make_config(fleet, "clocks", {"h0": {}, "h1": {}, "h2": skewed}, count=1, seconds=0.1)
    )
    progress = Events()
    result = run_sweep_concurrent(store, config, None, progress=progress)
    assert not result.failed, [r.error for r in result.failed]
    clocks = json.loads((sweep_dir(store, "clocks") / "schedule.json").read_text())["clocks"]
    assert set(clocks) == {"h0", "h1", "h2"}
    slack = 1e-5  # the schedule rounds to microseconds
    skew = clocks["h2"]
    assert abs(skew["offset_s"] - offset) <= skew["uncertainty_s"] + slack, skew
    assert skew["uncertainty_s"] < 1.0 and skew["agreeing"] is False
    assert progress.saw("CLOCK h2 is +30.0")
    for name in ("h0", "h1"):  # these share this machine's clock
        reading = clocks[name]
        assert reading["agreeing"] is True, reading
        assert abs(reading["offset_s"]) <= reading["uncertainty_s"] + slack
    spread = abs(clocks["h0"]["offset_s"] - clocks["h1"]["offset_s"])
    assert spread <= clocks["h0"]["uncertainty_s"] + clocks["h1"]["uncertainty_s"] + slack
