"""The concurrent scheduler against FakeDevices and the real Runner (fake backend)."""

from __future__ import annotations

import json
import shutil
import threading
import time
from pathlib import Path

import pytest
from tests.kit.backend import FakeBackend
from tests.kit.configs import NO_BACKOFF
from tests.kit.scheduler import SCHEDULER_DECODE, Events, fleet_factory, real_runner
from tests.scheduler.lab import make_config

from benchlab.devices.fake import FakeBehaviour, FakeMachine
from benchlab.errors import StoreError
from benchlab.layout import Store
from benchlab.models import GitInfo
from benchlab.sweep.attempt import HOLE_WARNING
from benchlab.sweep.lock import SweepLock, request_stop
from benchlab.sweep.order import order_points
from benchlab.sweep.schedule_log import read_retries
from benchlab.sweep.scheduler import run_sweep, run_sweep_concurrent

FAST_BREAKER = {"failure_threshold": 3, "recovery_after_s": 0.15, "drain_after_cooldowns": 2}


def run(store: Path, config, fleet, **kw):  # type: ignore[no-untyped-def]
    events = kw.pop("progress", None) or Events()
    result = run_sweep_concurrent(
        store,
        config,
        "lab.yaml",
        progress=events,
        _runner=real_runner(store, config),
        _transport_factory=fleet_factory(fleet),
        **kw,
    )
    return result, events


def sweep_dir(store: Path) -> Path:
    return Store(store).sweep_dir("exp")


def test_every_point_runs_once_with_worker_ids_and_schedule(store: Path) -> None:
    config = make_config({"laptop": {"max_concurrency": 2}, "pi5": {}})
    fleet = {"laptop": FakeBehaviour(clock_offset_s=5.0), "pi5": FakeBehaviour()}
    result, events = run(store, config, fleet)
    assert len(result.records) == 12 and not result.failed and not result.stopped
    assert {r.worker for r in result.records if r.device == "laptop"} <= {"laptop-0", "laptop-1"}
    assert {r.worker for r in result.records if r.device == "pi5"} == {"pi5-0"}
    schedule = json.loads((sweep_dir(store) / "schedule.json").read_text())
    assert schedule["policy"]["order"] == "spec"
    assert schedule["devices"]["laptop"]["outcomes"] == {"ok": 6}
    assert schedule["clocks"]["laptop"]["agreeing"] is False
    assert schedule["clocks"]["laptop"]["offset_s"] == pytest.approx(5.0, abs=0.05)
    assert schedule["clocks"]["pi5"]["agreeing"] is True
    assert len(schedule["assignments"]) == 12
    assert {a["worker"] for a in schedule["assignments"]} == {"laptop-0", "laptop-1", "pi5-0"}
    assert [d[0] for d in events.done] == list(range(1, 13))
    assert not (sweep_dir(store) / "lock").exists()
    assert any("CLOCK laptop is +5.0" in line for line in events.lines)


def test_per_device_concurrency_is_honoured(store: Path) -> None:
    config = make_config({"laptop": {"max_concurrency": 3}, "pi5": {}}, models=("a", "b", "c"))
    fleet = {"laptop": FakeBehaviour(duration_s=0.05), "pi5": FakeBehaviour(duration_s=0.02)}
    result, _ = run(store, config, fleet)
    assert not result.failed
    assert fleet["laptop"].max_running == 3
    assert fleet["pi5"].max_running == 1


def test_resource_group_holds_one_job_and_takes_turns(store: Path) -> None:
    machine = FakeMachine()
    devices = {
        name: {"resource_group": "cpu", "max_concurrency": 2} for name in ("host", "pod1", "pod2")
    }
    config = make_config(
        devices, resource_groups={"cpu": {"group_max_concurrency": 3}}, models=("a", "b")
    )
    fleet = {name: FakeBehaviour(duration_s=0.01, machine=machine) for name in devices}
    result, _ = run(store, config, fleet)
    assert not result.failed
    assert machine.max_running == 2  # the tightest declared limit (2) beats the group's 3
    config = make_config({name: {"resource_group": "cpu"} for name in devices}, models=("a", "b"))
    machine = FakeMachine()
    fleet = {name: FakeBehaviour(duration_s=0.005, machine=machine) for name in devices}
    shutil.rmtree(store)
    store.mkdir()
    run(store, config, fleet)
    assert machine.max_running == 1
    assert machine.order == ["host", "pod1", "pod2"] * 4


def test_transport_failure_is_retried_and_the_record_says_so(store: Path) -> None:
    config = make_config({"pi5": {}}, models=("a",), threads=(1,))
    fleet = {"pi5": FakeBehaviour(fail_next=1)}
    result, _ = run(store, config, fleet, _measure_clocks=False)
    (record,) = result.records
    assert record.status == "ok"
    assert record.attempt == 2 and record.attempts == 3
    assert record.warnings == ["produced on attempt 2 of 3 after 1 transport failure(s) on pi5"]
    (line,) = read_retries(sweep_dir(store) / "retries.jsonl")
    assert line["action"] == "retry" and line["device"] == "pi5" and line["attempt"] == 1
    assert line["run_id"] == record.run_id and "connection refused" in line["error"]


def test_measurement_failure_is_not_retried(store: Path) -> None:
    config = make_config({"pi5": {}}, models=("a",), threads=(1,))
    fleet = {"pi5": FakeBehaviour(exit_code=1)}
    result, _ = run(store, config, fleet, _measure_clocks=False)
    (record,) = result.records
    assert record.failure_kind == "measurement" and record.attempt == 1
    assert fleet["pi5"].runs == 1
    assert read_retries(sweep_dir(store) / "retries.jsonl") == []


def test_dead_device_trips_the_breaker_and_drains_into_holes(store: Path) -> None:
    config = make_config(
        {"laptop": {}, "pi5": {}},
        policies={"retries": {"attempts": 2, "backoff_s": 0}, "breaker": FAST_BREAKER},
    )
    fleet = {"laptop": FakeBehaviour(), "pi5": FakeBehaviour(down=True)}
    result, events = run(store, config, fleet)
    laptop = [r for r in result.records if r.device == "laptop"]
    pi5 = [r for r in result.records if r.device == "pi5"]
    assert len(laptop) == 6 and all(r.status == "ok" for r in laptop)
    assert len(pi5) == 6 and all(r.status == "failed" for r in pi5)
    assert (
        "DOWN pi5 taken out of service after 3 transport failures: device 'pi5': connection refused"
    ) in events.lines
    assert any(line.startswith("DRAIN pi5") for line in events.lines)
    holes = [r for r in pi5 if r.attempt == 0]
    assert holes, "the points never attempted are holes"
    for hole in holes:
        assert hole.error.startswith(
            "not attempted: device 'pi5' was taken out of service after repeated transport "
            "failures (device 'pi5': connection refused)"
        )
        assert hole.error.endswith("Re-run to retry this point.")
        assert hole.warnings == [HOLE_WARNING]
    # Exactly one probe per cooldown: two cooldowns, two probes, after the 3 trip failures.
    run_calls = [c for c in fleet["pi5"].calls if c[0] == "run"]
    assert len(run_calls) == 5
    schedule = json.loads((sweep_dir(store) / "schedule.json").read_text())
    trip = schedule["devices"]["pi5"]["breaker"]["trips"][0]
    assert trip["failures"] == 3 and trip["probes_failed"] == 2 and "drained_at" in trip
    assert schedule["devices"]["pi5"]["breaker"]["state"] == "drained"
    assert schedule["devices"]["pi5"]["breaker"]["down_since"]
    actions = [line["action"] for line in read_retries(sweep_dir(store) / "retries.jsonl")]
    assert actions.count("hole") == len(holes)

    # Resume picks the holes up once the device answers again.
    fleet["pi5"].down = False
    resumed, _ = run(store, config, fleet)
    assert len(resumed.records) == 6 and not resumed.failed


def test_device_that_comes_back_answers_its_probe(store: Path) -> None:
    config = make_config(
        {"pi5": {}},
        policies={
            "retries": {"attempts": 4, "backoff_s": 0},
            "breaker": {"failure_threshold": 3, "recovery_after_s": 0.3},
        },
    )
    fleet = {"pi5": FakeBehaviour(fail_next=3)}
    result, events = run(store, config, fleet, _measure_clocks=False)
    assert not result.failed
    assert "UP pi5 answered its recovery probe and is back in service" in events.lines
    index_down = next(i for i, line in enumerate(events.lines) if line.startswith("DOWN pi5"))
    assert (
        events.lines.index("UP pi5 answered its recovery probe and is back in service") > index_down
    )
    (first,) = [r for r in result.records if r.attempt > 1]
    assert first.warnings == ["produced on attempt 4 of 4 after 3 transport failure(s) on pi5"]


def test_failover_moves_points_under_their_own_run_ids(store: Path) -> None:
    config = make_config(
        {"pi5": {"failover_to": ["spare1", "spare2"]}, "spare1": {}, "spare2": {}},
        matrix_devices=["pi5"],
        policies={
            "retries": {"attempts": 1, "backoff_s": 0},
            "breaker": {
                "failure_threshold": 1,
                "recovery_after_s": 0.0,
                "drain_after_cooldowns": 1,
            },
            "fitness": {"seed": 42, "exploration": 0.1},
        },
    )
    fleet = {"pi5": FakeBehaviour(down=True), "spare1": FakeBehaviour(), "spare2": FakeBehaviour()}
    result, _ = run(store, config, fleet)
    moved = [r for r in result.records if r.spec and r.spec.failover_from == "pi5"]
    original = [r for r in result.records if r.device == "pi5"]
    # The first point used its one attempt (the trip), the second was the failed probe that
    # drained pi5; the four never attempted there moved.
    assert len(moved) == 4 and all(r.status == "ok" for r in moved)
    assert all("failover-from:pi5" in r.tags for r in moved)
    assert {r.device for r in moved} <= {"spare1", "spare2"}
    assert not {r.run_id for r in moved} & {r.run_id for r in original}
    assert len(original) == 6 and all(r.status == "failed" for r in original)
    schedule = json.loads((sweep_dir(store) / "schedule.json").read_text())
    assert schedule["failover"]["seed"] == 42
    assert len(schedule["failover"]["choices"]) == 4
    assert schedule["devices"]["pi5"]["outcomes"]["moved"] == 4
    lines = read_retries(sweep_dir(store) / "retries.jsonl")
    failovers = [line for line in lines if line["action"] == "failover"]
    assert len(failovers) == 4
    assert {line["to_run_id"] for line in failovers} == {r.run_id for r in moved}


def test_order_policies_decide_the_start_order(store: Path) -> None:
    for policy in ("interleave", "shuffle"):
        shutil.rmtree(store, ignore_errors=True)
        store.mkdir(parents=True)
        config = make_config(
            {"pi5": {}},
            models=("a", "b"),
            threads=(1, 2, 4),
            policies={"order": policy, "order_seed": 9},
        )
        fleet = {"pi5": FakeBehaviour()}
        result, events = run(store, config, fleet, _measure_clocks=False)
        from benchlab.sweep.expand import expand

        expected = order_points(expand(config), policy, seed=9, device="pi5")
        by_id = {r.run_id: r.spec.spec_id for r in result.records}
        started = [by_id[run_id] for _, _, run_id, _ in events.done]
        assert started == [s.spec_id for s in expected]


def test_stop_request_lets_in_flight_finish_and_leaves_the_rest_pending(store: Path) -> None:
    config = make_config({"pi5": {}}, models=("a", "b", "c"))
    fleet = {"pi5": FakeBehaviour(duration_s=0.2)}

    def stopper() -> None:
        deadline = time.monotonic() + 5
        while fleet["pi5"].runs < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        request_stop(Store(store), "exp")

    thread = threading.Thread(target=stopper)
    thread.start()
    result, events = run(store, config, fleet, _measure_clocks=False)
    thread.join()
    assert result.stopped
    assert 1 <= len(result.records) < 6
    assert all(r.status == "ok" for r in result.records)  # nothing became a hole
    assert not (sweep_dir(store) / "stop").exists()
    assert not (sweep_dir(store) / "lock").exists()
    assert any(line.startswith("STOP exp") for line in events.lines)
    resumed, _ = run(store, config, fleet, _measure_clocks=False)
    assert len(resumed.records) == 6 - len(result.records)
    assert resumed.skipped == len(result.records)


def test_a_second_sweep_of_the_same_experiment_is_refused(store: Path) -> None:
    config = make_config({"pi5": {}}, models=("a",), threads=(1,))
    with SweepLock(Store(store), "exp"), pytest.raises(StoreError, match="already running"):
        run(store, config, {"pi5": FakeBehaviour()})


def _same_run_elsewhere(store: Path, tmp_path: Path) -> Path:
    """A second store holding only the first one's state.json: the same stamp, so the same
    run ids, and nothing done yet."""
    other = tmp_path / "other"
    (other / "runs" / "sweeps" / "exp").mkdir(parents=True)
    shutil.copy(sweep_dir(store) / "state.json", other / "runs" / "sweeps" / "exp")
    return other


def _trace(store: Path, records) -> dict[str, list]:  # type: ignore[no-untyped-def]
    """What a sweep left, line by line, without wall times, durations or session ids."""
    schedule = json.loads((sweep_dir(store) / "schedule.json").read_text())
    policy = {k: v for k, v in schedule["policy"].items() if k not in ("mode", "breaker")}
    history = [
        json.loads(line)
        for path in sorted((store / "runs" / "devices").glob("*/history.jsonl"))
        for line in path.read_text().splitlines()
    ]
    return {
        "records": sorted(
            (r.run_id, r.status, r.failure_kind, r.attempt, r.attempts, r.worker, *r.warnings)
            for r in records
        ),
        "schedule": [
            policy,
            schedule["devices"],
            schedule["assignments"],
            schedule["points"],
            schedule["groups"],
        ],
        "history": sorted(
            (x["machine"], x["device"], x["outcome"], x["run_id"], x.get("point")) for x in history
        ),
        "retries": sorted(
            (x["device"], x["run_id"], x["attempt"], x["action"], x["worker"])
            for x in read_retries(sweep_dir(store) / "retries.jsonl")
        ),
    }


def _mixed_fleet() -> dict[str, FakeBehaviour]:
    """The fleet both engines run in the comparisons: a good device, one whose measurement
    fails (exit 3), one whose transport fails once, another good one."""
    return {
        "laptop": FakeBehaviour(),
        "pi5": FakeBehaviour(exit_code=3),
        "host": FakeBehaviour(fail_next=1),
        "pod": FakeBehaviour(),
    }


def test_sequential_is_the_scheduler_with_one_worker(store: Path, tmp_path: Path) -> None:
    """`bench run` and `bench run --concurrent` are one engine: run one point at a
    time they leave the same records, schedule.json, history and retries.jsonl."""
    devices = {"laptop": {}, "pi5": {}, "host": {"resource_group": "g"}, "pod": {}}
    devices["pod"] = {"resource_group": "g"}
    config = make_config(devices, policies={**NO_BACKOFF, "max_in_flight": 1})

    events = Events()
    sequential = run_sweep(
        store,
        config,
        "lab.yaml",
        progress=events,
        _transport_factory=fleet_factory(_mixed_fleet()),
        _backend=lambda _: FakeBackend(decode=SCHEDULER_DECODE),
        _git_info=GitInfo(),
    )
    other = _same_run_elsewhere(store, tmp_path)
    concurrent, _ = run(other, config, _mixed_fleet(), _measure_clocks=False)
    one, two = _trace(store, sequential.records), _trace(other, concurrent.records)
    for part in one:
        assert one[part] == two[part], part
    assert len(one["records"]) == 24 and len(one["history"]) == 25 and len(one["retries"]) == 1
    # Sequential: one point at a time, in the config's order (device by device).
    assert [r.device for r in sequential.records] == [d for d in devices for _ in range(6)]
    mode = json.loads((sweep_dir(store) / "schedule.json").read_text())["policy"]["mode"]
    assert mode == "sequential"


def test_same_records_as_the_sequential_reference(store: Path, tmp_path: Path) -> None:
    devices = {"laptop": {"max_concurrency": 2}, "pi5": {}, "host": {"resource_group": "g"}}
    devices["pod"] = {"resource_group": "g"}
    config = make_config(devices)

    sequential = run_sweep(
        store,
        config,
        "lab.yaml",
        _transport_factory=fleet_factory(_mixed_fleet()),
        _backend=lambda _: FakeBackend(decode=SCHEDULER_DECODE),
        _sleep=lambda _: None,
        _git_info=GitInfo(),
    )
    other = _same_run_elsewhere(store, tmp_path)
    concurrent, _ = run(other, config, _mixed_fleet(), _measure_clocks=False)

    def summary(records):  # type: ignore[no-untyped-def]
        return sorted(
            (r.run_id, r.status, r.failure_kind, r.attempt, tuple(r.warnings)) for r in records
        )

    assert summary(concurrent.records) == summary(sequential.records)
    assert len(concurrent.records) == 24


def test_several_workers_on_a_dead_device_send_exactly_one_probe_per_cooldown(store: Path) -> None:
    config = make_config(
        {"pi5": {"max_concurrency": 3}},
        models=("a", "b", "c", "d"),
        policies={"retries": {"attempts": 1, "backoff_s": 0}, "breaker": FAST_BREAKER},
    )
    fleet = {"pi5": FakeBehaviour(down=True, duration_s=0.0)}
    result, _ = run(store, config, fleet, _measure_clocks=False)
    assert len(result.records) == 8 and all(r.status == "failed" for r in result.records)
    schedule = json.loads((sweep_dir(store) / "schedule.json").read_text())
    probes = [a for a in schedule["assignments"] if a["probe"]]
    assert len(probes) == 2
    run_calls = [t for verb, t in fleet["pi5"].calls if verb == "run"]
    # After the trip nothing but the probes reached the device, one cooldown apart.
    assert len(run_calls) - len(probes) >= 3
    first_probe, second_probe = run_calls[-2], run_calls[-1]
    assert second_probe - first_probe >= FAST_BREAKER["recovery_after_s"] * 0.9
