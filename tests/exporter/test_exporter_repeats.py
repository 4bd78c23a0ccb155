"""Every series once per scrape: repeats, budget rounds, and machines that share a device name.

A scrape that states one series twice is not an error to Prometheus: it keeps one sample and
drops the rest, so the graph shows an arbitrary repeat. The conftest parser refuses a series
given twice; promtool (2.42) does not look, so both are asked.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.kit.configs import write_sweep
from tests.kit.oracle import promtool_accepts
from tests.kit.runs import write_run

from benchlab.layout import Store, atomic_write_json
from benchlab.observe.exporter import scrape

STAMP = "20261201T000000Z"
DECODE = "benchlab_point_decode_tokens_per_second"
PRINT_RATE = "print('{\"d\": {threads}5.0}')"


def _bench(store: Path, *argv: str) -> str:
    env = {**os.environ, "BENCHLAB_STORE": str(store)}
    done = subprocess.run(
        [sys.executable, "-m", "benchlab", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.integration
def test_a_sweep_with_repeats_and_budget_rounds_states_each_series_once(
    store: Path, tmp_path: Path, prom_parse
) -> None:
    config = write_sweep(
        tmp_path / "lab.yaml",
        experiment="lab",
        matrix={
            "backend": "command",
            "threads": [1, 2],
            "prompt_tokens": 8,
            "gen_tokens": 4,
            "repeats": 3,
            "params": {"argv": ["{python}", "-c", PRINT_RATE], "fields": {"decode": "d"}},
        },
    )
    _bench(store, "run", str(config), "--concurrent")  # repeats 0, 1, 2 of two points
    _bench(store, "run", str(config), "--concurrent", "--for", "2s")  # then budget rounds
    text = _bench(store, "export", str(store / "runs" / "sweeps" / "lab"))
    parsed = prom_parse(text)  # refuses a series stated twice
    promtool_accepts(text)
    runs = {labels["threads"]: value for labels, value in parsed["benchlab_point_runs"]["samples"]}
    assert set(runs) == {"1", "2"} and min(runs.values()) >= 4, runs
    finished = parsed["benchlab_runs_finished"]["samples"]
    assert sum(value for labels, value in finished if labels["status"] == "ok") == sum(
        runs.values()
    )
    decode = sorted((labels["threads"], value) for labels, value in parsed[DECODE]["samples"])
    assert decode == [("1", 15.0), ("2", 25.0)]


def _repeat(store: Path, machine: str, device: str, index: int, decode: float) -> None:
    """Repeat `index` of one decode point on `device` of `machine`, as the runner leaves it."""
    run_id = f"{machine}-tiny-q8-decode-{index:016x}-{STAMP}"
    run_dir = write_run(
        store,
        run_id,
        machine_id=machine,
        model="tiny",
        mode="decode",
        experiment="lab",
        threads=4,
        prompt_tokens=128,
        gen_tokens=64,
        decode=decode,
        telemetry={"temperature_c": {"max": 50.0 + index}, "power_w": {"median": 5.0}},
        duration_s=1.0,
    )
    record = json.loads((run_dir / "record.json").read_text())
    record["device"] = record["spec"]["device"] = device
    record["spec"]["repeat"] = index or None
    atomic_write_json(run_dir / "record.json", record)


@pytest.fixture
def sweep_dir(store: Path) -> Path:
    sweep = Store(store).sweep_dir("lab")
    atomic_write_json(sweep / "state.json", {"experiment": "lab", "stamp": STAMP})
    return sweep


def test_repeats_of_a_point_are_one_series_of_their_current_level(
    store: Path, sweep_dir: Path, prom_parse
) -> None:
    # No step in five runs: the level is their mean (query.level.current_level).
    for index, decode in enumerate([10.0, 30.0, 20.0, 25.0, 5.0]):
        _repeat(store, "laptop", "laptop", index, decode)
    text = scrape(sweep_dir)
    parsed = prom_parse(text)
    [(labels, value)] = parsed[DECODE]["samples"]
    assert value == 18.0 and "repeat" not in labels and "round" not in labels
    assert [v for _, v in parsed["benchlab_point_runs"]["samples"]] == [5.0]
    assert [v for _, v in parsed["benchlab_point_temperature_celsius"]["samples"]] == [54.0]
    promtool_accepts(text)


def test_two_machines_that_call_their_device_local_are_two_series(
    store: Path, sweep_dir: Path, prom_parse
) -> None:
    for index, machine in enumerate(["box-a", "box-b"]):
        _repeat(store, machine, "local", index, 10.0 * (index + 1))
    atomic_write_json(
        sweep_dir / "schedule.json",
        {"devices": {"local": {"machine_id": "box-b", "breaker": {"state": "closed"}}}},
    )
    (sweep_dir / "retries.jsonl").write_text(
        '{"device": "local", "machine_id": "box-a", "kind": "transport"}\n'
        '{"device": "local", "kind": "transport"}\n'
    )
    parsed = prom_parse(scrape(sweep_dir))
    decode = sorted((s[0]["machine"], s[0]["device"], s[1]) for s in parsed[DECODE]["samples"])
    assert decode == [("box-a", "local", 10.0), ("box-b", "local", 20.0)]
    finished = sorted((s[0]["machine"], s[1]) for s in parsed["benchlab_runs_finished"]["samples"])
    assert finished == [("box-a", 1.0), ("box-b", 1.0)]
    up = parsed["benchlab_device_up"]["samples"]
    assert up == [({"machine": "box-b", "device": "local"}, 1.0)]
    failures = sorted(
        (s[0]["machine"], s[1]) for s in parsed["benchlab_transport_failures"]["samples"]
    )
    assert failures == [("box-a", 1.0), ("box-b", 1.0)]


def test_device_state_takes_its_machine_from_the_schedules_assignments(
    store: Path, sweep_dir: Path, prom_parse
) -> None:
    _repeat(store, "box-a", "local", 0, 10.0)  # an older record, from another machine
    atomic_write_json(
        sweep_dir / "schedule.json",
        {
            "devices": {"local": {"breaker": {"state": "open", "trips": [{}]}}},
            "assignments": [{"device": "local", "machine_id": "box-c", "status": "ok"}],
        },
    )
    parsed = prom_parse(scrape(sweep_dir))
    assert parsed["benchlab_device_up"]["samples"] == [
        ({"machine": "box-c", "device": "local"}, 0.0)
    ]
    assert parsed["benchlab_breaker_trips"]["samples"] == [
        ({"machine": "box-c", "device": "local"}, 1.0)
    ]


def test_a_point_that_regressed_is_exported_at_its_current_level(
    store: Path, sweep_dir: Path, prom_parse
) -> None:
    # Rounds at ~100 tok/s, then ~72 (a 28% step): the exporter says what the point does
    # now, as `bench best` and the site do, not the median of both levels (~86).
    before = [100.0, 101.0, 99.0, 100.0, 102.0, 98.0]
    after = [72.0, 71.0, 73.0, 72.0, 70.0, 74.0]
    for index, decode in enumerate(before + after):
        _repeat(store, "laptop", "laptop", index, decode)
    parsed = prom_parse(scrape(sweep_dir))
    [(_, value)] = parsed[DECODE]["samples"]
    assert value == pytest.approx(72.0)


def test_a_marked_outlier_never_feeds_the_exported_value(
    store: Path, sweep_dir: Path, prom_parse
) -> None:
    for index, decode in enumerate([10.0, 12.0, 1000.0]):
        _repeat(store, "laptop", "laptop", index, decode)
    run_dir = next(p for p in store.rglob("record.json") if "0000000000000002" in str(p)).parent
    record = json.loads((run_dir / "record.json").read_text())
    record["tags"] = [*record.get("tags", []), "outlier"]
    atomic_write_json(run_dir / "record.json", record)
    parsed = prom_parse(scrape(sweep_dir))
    [(_, value)] = parsed[DECODE]["samples"]
    assert value == 11.0
    assert [v for _, v in parsed["benchlab_point_runs"]["samples"]] == [2.0]
