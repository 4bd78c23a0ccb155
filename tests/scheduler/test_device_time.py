"""The "pending" penalty counts time ON the device beyond what that device usually takes,
never time a point waits in benchlab's own queue (pure logic: an injected clock, no
workers, no transports)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.kit.configs import parse_sweep
from tests.kit.scheduler import bare_sweep

from benchlab.layout import Store
from benchlab.models import RunRecord, Timings
from benchlab.sweep.dispatch import check_pending, next_job
from benchlab.sweep.expand import expand
from benchlab.sweep.history import DeviceHistory, point_key
from benchlab.sweep.outcomes import finish, flush_history
from benchlab.sweep.scheduler import enqueue
from benchlab.sweep.worker_state import PENDING_CHECK_S, Job, SweepState

POINTS = 20
SLACK_S = 600.0


def _sweep(store: Path, now: list[float], *, seconds: float, known: int = POINTS) -> SweepState:
    """A 1-slot device `slow` on machine `m` with POINTS points, the last `known` of which
    its history says take `seconds` (so the whole queue waits far past SLACK_S)."""
    config = parse_sweep(
        experiment="slow",
        devices={"slow": {"transport": "local", "machine_id": "m"}},
        policies={"fitness": {"pending_after_s": SLACK_S, "exploration": 0}},
        matrix={"device": "slow", "backend": "reference", "threads": list(range(1, POINTS + 1))},
    )
    specs = expand(config)
    earlier = DeviceHistory(Store(store), "yesterday")
    for spec in specs[POINTS - known :]:
        earlier.record("m", "slow", "ok", None, point=point_key(spec), duration_s=seconds)
    earlier.flush()
    sweep = bare_sweep(store, config, lambda: now[0])
    enqueue(sweep, specs)
    return sweep


def _ok(job: Job, seconds: float) -> RunRecord:
    spec = job.point.spec
    return RunRecord(
        run_id=job.point.run_id,
        spec_id=spec.spec_id,
        machine_id=spec.machine_id,
        device=spec.device,
        status="ok",
        timings=Timings(duration_s=seconds),
        spec=spec,
    )


def _hold(sweep: SweepState, now: list[float], seconds: float) -> None:
    """Let `seconds` pass, the main thread looking every PENDING_CHECK_S as it does."""
    end = now[0] + seconds
    while now[0] < end:
        now[0] = min(now[0] + PENDING_CHECK_S, end)
        check_pending(sweep)


def _outcomes(store: Path) -> list[str]:
    path = store / "runs/devices/m/history.jsonl"
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    return [x["outcome"] for x in lines if x["experiment"] == "slow"]


def test_a_healthy_slow_device_keeps_fitness_one(store: Path) -> None:
    now = [0.0]
    sweep = _sweep(store, now, seconds=60.0)
    device = sweep.devices["slow"]
    for _ in range(POINTS):  # the last point waits 19 minutes in the queue: not the device's
        job = next_job(sweep, device)
        assert isinstance(job, Job)
        _hold(sweep, now, 60.0)
        finish(sweep, device, "slow/0", job, _ok(job, 60.0), None)
    flush_history(sweep)
    assert now[0] == POINTS * 60.0 > SLACK_S
    assert sweep.fitness.fitness("slow") == 1.0
    assert _outcomes(store) == ["ok"] * POINTS
    ok = json.loads((store / "runs/devices/m/history.jsonl").read_text().splitlines()[-1])
    assert ok["machine"] == "m" and ok["device"] == "slow" and ok["duration_s"] == 60.0


def test_a_device_that_holds_a_point_past_its_usual_time_is_penalised_once(store: Path) -> None:
    now = [0.0]
    sweep = _sweep(store, now, seconds=60.0)
    device = sweep.devices["slow"]
    job = next_job(sweep, device)
    assert isinstance(job, Job)
    _hold(sweep, now, 60.0 + SLACK_S - PENDING_CHECK_S)  # within its usual time and the slack
    assert sweep.fitness.fitness("slow") == 1.0
    _hold(sweep, now, 3 * PENDING_CHECK_S)  # now past both: the device holds it too long
    _hold(sweep, now, 10 * PENDING_CHECK_S)  # counted once, not once per look
    flush_history(sweep)
    assert sweep.fitness.fitness("slow") < 1.0
    assert _outcomes(store) == ["pending"]
    (line,) = [
        json.loads(x)
        for x in (store / "runs/devices/m/history.jsonl").read_text().splitlines()
        if json.loads(x)["outcome"] == "pending"
    ]
    assert line["run_id"] == job.point.run_id and line["machine"] == "m"


def test_the_expectation_is_the_device_own(store: Path) -> None:
    """A device whose points usually take 2000 s is not penalised while within that and
    the slack."""
    now = [0.0]
    sweep = _sweep(store, now, seconds=2000.0)
    device = sweep.devices["slow"]
    assert isinstance(next_job(sweep, device), Job)
    _hold(sweep, now, 2000.0 + SLACK_S - PENDING_CHECK_S)
    assert sweep.fitness.fitness("slow") == 1.0


def test_a_point_new_to_the_device_is_expected_to_take_its_usual_time(store: Path) -> None:
    """The first point has no past duration of its own: the device's usual one stands in."""
    now = [0.0]
    sweep = _sweep(store, now, seconds=2000.0, known=POINTS - 1)
    device = sweep.devices["slow"]
    job = next_job(sweep, device)
    assert isinstance(job, Job) and point_key(job.point.spec) not in device.expected
    _hold(sweep, now, 2000.0 + SLACK_S - PENDING_CHECK_S)
    assert sweep.fitness.fitness("slow") == 1.0
    _hold(sweep, now, 3 * PENDING_CHECK_S)
    assert sweep.fitness.fitness("slow") < 1.0
