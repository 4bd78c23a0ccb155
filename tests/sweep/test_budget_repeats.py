"""Time budgets, repeats, injection, plug-in order, global slots, lasting fitness, outliers:
real `bench run` on this machine with the command backend."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from tests.kit.catalog import catalog_doc
from tests.kit.configs import write_sweep
from tests.sweep import order_plugins
from tests.sweep.lab import ONE_ATTEMPT, command_params

from benchlab.cli import main
from benchlab.layout import Store
from benchlab.sweep.history import DeviceHistory
from benchlab.sweep.inject import InjectedQueue, append_points

PLUGINS = order_plugins.__name__
"""The order plug-ins' module as `policies.order` names it (imported here, so it is found)."""

SLEEPY = "import json, time; time.sleep(SLEEP); print(json.dumps(dict(decode=10)))"


def write(
    tmp_path: Path,
    *,
    experiment: str = "bud",
    devices: dict[str, Any] | None = None,
    policies: dict[str, Any] = ONE_ATTEMPT,
    matrix: dict[str, Any] | None = None,
    sleep: float = 0.05,
) -> Path:
    """A sweep of command points that sleep `sleep` s and report 10 t/s; `matrix` (f32 and
    q8 unless given) names the axes, the command is always the same."""
    return write_sweep(
        tmp_path / f"{experiment}.yaml",
        experiment=experiment,
        devices=devices,
        policies=policies,
        matrix={
            "precision": ["f32", "q8"],
            **(matrix or {}),
            "backend": "command",
            "params": command_params(SLEEPY.replace("SLEEP", str(sleep))),
        },
    )


@pytest.fixture
def env(store: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    return store


def records(store: Path) -> list[dict]:
    return [
        json.loads(p.read_text())
        for p in sorted((store / "runs" / "by-machine").glob("*/*/record.json"))
    ]


def stamp(text: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def test_repeats_are_own_runs_in_one_series(tmp_path: Path, env: Path, capsys) -> None:
    path = write(tmp_path, matrix={"precision": "f32", "repeats": 3})
    assert main(["run", str(path)]) == 0
    out = capsys.readouterr().out
    assert "local command tiny f32 r2:" in out
    found = records(env)
    assert len({r["run_id"] for r in found}) == 3
    assert sorted((r["spec"].get("repeat") or 0) for r in found) == [0, 1, 2]
    assert len({json.dumps(r["identity"], sort_keys=True) for r in found}) == 1
    assert main(["catalog", "build"]) == 0
    catalog = catalog_doc(env / "catalog.json")
    assert len(catalog["runs"]) == 3 and len({e["series"] for e in catalog["runs"]}) == 1


@pytest.mark.slow
def test_for_runs_rounds_until_the_deadline_then_dry_run_estimates(
    tmp_path: Path, env: Path, capsys
) -> None:
    path = write(tmp_path)
    began = time.time()
    assert main(["run", str(path), "--for", "3s"]) == 0
    out = capsys.readouterr().out
    assert "ROUND 1 local: 2 point(s)" in out and "deadline reached" in out
    found = records(env)
    assert len(found) >= 4 and all(r["status"] == "ok" for r in found)
    starts = [stamp(r["timings"]["started_at"]) for r in found]
    assert max(starts) <= began + 3 + 1  # nothing started after the deadline (1 s stamps)
    assert main(["run", str(path), "--dry-run", "--for", "1h", "--format", "json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    # the deadline may fall between the two points of a round: that round comes first
    assert plan["points_per_round"] == 2 and plan["first_round"] == len(found) // 2
    assert plan["pending_in_first_round"] == 2 - len(found) % 2
    assert plan["estimated_rounds"] > 100
    for spelling in ("90m", "45s"):
        assert main(["run", str(path), "--dry-run", "--for", spelling]) == 0
    assert "estimated rounds in 45.0 s:" in capsys.readouterr().out
    assert main(["run", str(path), "--for", "3 hours"]) == 2


@pytest.mark.slow
def test_a_point_that_cannot_finish_before_the_grace_is_left_pending(
    tmp_path: Path, env: Path, capsys
) -> None:
    # round 0 takes ~1.3 s of a 2 s budget; round 1 would end ~0.6 s past it: not started
    path = write(tmp_path, matrix={"precision": "f32"}, sleep=1.0)
    assert main(["run", str(path), "--for", "2s", "--grace", "0s"]) == 0
    out = capsys.readouterr().out
    assert "DEADLINE" in out and "not started" in out and "1 point(s) left pending" in out
    assert len(records(env)) == 1  # round 1 never started: no record, nothing half-written


STAMPED = (
    "import json, time; s = time.monotonic(); time.sleep(0.2); e = time.monotonic(); "
    "open(SPANS, 'a').write('%r %r\\n' % (s, e)); print(json.dumps(dict(decode=10)))"
)
"""A 0.2 s point that appends its own monotonic start and end (system-wide on Linux, so
comparable across the points' processes) to SPANS: the test's measure of overlap."""


@pytest.mark.slow
def test_concurrent_budget_with_a_global_slot_limit(tmp_path: Path, env: Path, capsys) -> None:
    devices = {
        "a": {"transport": "local", "max_concurrency": 2},
        "b": {"transport": "local", "machine_id": "b-m", "max_concurrency": 2},
    }
    spans_path = tmp_path / "spans.txt"
    path = write_sweep(
        tmp_path / "bud.yaml",
        experiment="bud",
        devices=devices,
        policies={**ONE_ATTEMPT, "max_in_flight": 1},
        matrix={
            "device": ["a", "b"],
            "precision": ["f32", "q8"],
            "backend": "command",
            "params": command_params(STAMPED.replace("SPANS", repr(str(spans_path)))),
        },
    )
    assert main(["run", str(path), "--concurrent", "--for", "3s"]) == 0
    assert "deadline reached" in capsys.readouterr().out
    found = records(env)
    # global slots go round robin: both devices ran, though one slot was all there was
    assert {r["device"] for r in found} == {"a", "b"} and len(found) >= 4
    spans = sorted(tuple(map(float, line.split())) for line in spans_path.read_text().splitlines())
    assert len(spans) == len(found)
    # one slot: each point started after the one before it ended (4 workers could overlap)
    overlaps = [(p, n) for p, n in itertools.pairwise(spans) if n[0] < p[1]]
    assert not overlaps, overlaps
    schedule = json.loads((env / "runs/sweeps/bud/schedule.json").read_text())
    assert schedule["policy"]["max_in_flight"] == 1 and schedule["deadline_reached"]


def test_injected_points_watermark_and_not_before(tmp_path: Path, env: Path) -> None:
    from benchlab.sweep.config import load_sweep_config
    from benchlab.sweep.expand import expand

    config = load_sweep_config(write(tmp_path))
    q8, f32 = expand(config)[1], expand(config)[0]
    path = tmp_path / "pending.jsonl"
    clock = [1000.0]
    queue = InjectedQueue(path, "bud", wall=lambda: clock[0])
    assert queue.poll() == [] and queue.watermark == 0
    append_points(path, [f32], None)
    append_points(path, [q8], "1970-01-01T00:20:00Z")  # due at 1200 s
    with open(path, "a") as handle:
        handle.write('{"half a line')  # a writer mid-line: left for the next poll
    assert [s.spec_id for s in queue.poll()] == [f32.spec_id]
    assert queue.waiting() == 1 and queue.watermark == len(path.read_bytes()) - len('{"half a line')
    clock[0] = 1300.0
    assert [s.spec_id for s in queue.poll()] == [q8.spec_id] and queue.waiting() == 0


@pytest.mark.slow
def test_bench_inject_reaches_a_running_sweep(tmp_path: Path, env: Path, capsys) -> None:
    path = write(tmp_path, matrix={"precision": "f32", "threads": 1}, sleep=1.5)
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchlab", "run", str(path), "--concurrent"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        time.sleep(0.8)
        assert main(["inject", str(path), "threads=2"]) == 0
        assert main(["inject", str(path), "threads=3", "--after", "1h"]) == 0
        out, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, out
    assert "INJECT" in out and "local command tiny f32 t2:" in out
    assert "1 injected point(s) not due yet" in out
    assert sorted(r["spec"]["threads"] for r in records(env)) == [1, 2]


def test_order_plugin_and_a_plugin_that_drops_a_point(tmp_path: Path, env: Path, capsys) -> None:
    path = write(tmp_path, policies={"order": f"{PLUGINS}:reverse"})
    assert main(["run", str(path), "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert " q8 " in lines[1] and " f32 " in lines[2]
    bad = write(tmp_path, experiment="bad", policies={"order": f"{PLUGINS}:drop_one"})
    assert main(["run", str(bad), "--dry-run"]) == 2
    assert "may only reorder" in capsys.readouterr().err
    nowhere = write(tmp_path, experiment="nowhere", policies={"order": "no_such_mod:f"})
    assert main(["run", str(nowhere), "--dry-run"]) == 2
    assert "policies.order: cannot import 'no_such_mod'" in capsys.readouterr().err


def test_fitness_lasts_across_sessions_and_steers_failover(
    tmp_path: Path, env: Path, capsys
) -> None:
    devices = {
        "main": {
            "transport": "exec",
            "command": ["/bin/false"],
            "failover_to": ["spare-a", "spare-b"],
        },
        "spare-a": {"transport": "local"},
        "spare-b": {"transport": "local", "machine_id": "spare-b-m"},
    }
    policies = {
        **ONE_ATTEMPT,
        "fitness": {"exploration": 0},
        "breaker": {"failure_threshold": 1, "recovery_after_s": 0, "drain_after_cooldowns": 1},
    }
    path = write(
        tmp_path,
        experiment="fit",
        devices=devices,
        policies=policies,
        matrix={"device": "main", "precision": ["f32", "q8", "q4"]},
    )
    history = DeviceHistory(Store(env), "an-earlier-sweep")
    for _ in range(5):
        history.record("spare-a", "spare-a", "failed", None)
    history.flush()
    assert main(["run", str(path), "--concurrent"]) == 0  # failures are results: exit 0
    capsys.readouterr()
    schedule = json.loads((env / "runs/sweeps/fit/schedule.json").read_text())
    (choice,) = schedule["failover"]["choices"]
    assert choice["fitness"] == {"spare-a": 0.0, "spare-b": 1.0} and choice["chosen"] == "spare-b"
    assert main(["devices", "report", "--format", "json"]) == 0
    fleet = {d["device"]: d for d in json.loads(capsys.readouterr().out)["devices"]}
    assert fleet["spare-a"]["fitness"] == 0.0 and fleet["spare-b"]["fitness"] == 1.0
    assert fleet["main"]["transport_failures"] >= 1 and fleet["main"]["machine_id"] == "main"


def test_mark_outlier_survives_a_rebuild(tmp_path: Path, env: Path, capsys) -> None:
    assert main(["run", str(write(tmp_path, matrix={"precision": "f32"}))]) == 0
    (record,) = records(env)
    assert main(["mark-outlier", record["run_id"], "--reason", "thermal throttling"]) == 0
    assert main(["catalog", "build"]) == 0
    assert main(["catalog", "build"]) == 0
    (entry,) = catalog_doc(env / "catalog.json")["runs"]
    assert "outlier" in entry["tags"]
    (marked,) = records(env)
    assert "marked as an outlier by hand: thermal throttling" in marked["warnings"]
    assert main(["mark-outlier", record["run_id"], "--clear"]) == 0
    assert main(["catalog", "build"]) == 0
    (entry,) = catalog_doc(env / "catalog.json")["runs"]
    assert "outlier" not in entry["tags"]
    assert main(["mark-outlier", "local-nope-f32-batch-00000000-20260101T000000Z"]) != 0
