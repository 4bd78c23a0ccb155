"""Fitness, order policies, resource groups and the lock: the scheduler's pure parts."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from pydantic import ValidationError

from benchlab.errors import ConfigError, StoreError
from benchlab.layout import Store, validation_message
from benchlab.models import FitnessPolicy, RunSpec, SweepConfig
from benchlab.sweep import groups, lock, order
from benchlab.sweep.fitness import FitnessBook

# --- fitness -------------------------------------------------------------------------------


def test_fitness_counts_in_flight_and_ok_over_the_window() -> None:
    book = FitnessBook(FitnessPolicy(window=4))
    assert book.fitness("a") == 1.0  # unknown: discovery
    book.started("a")
    assert book.fitness("a") == 1.0
    book.finished("a", ok=False)
    assert book.fitness("a") == 0.0
    for _ in range(3):
        book.finished("a", ok=True)  # window 4: [F, T, T, T]
    assert book.fitness("a") == 0.75
    book.finished("a", ok=True)  # the failure is forgotten
    assert book.fitness("a") == 1.0
    book.started("a")
    book.outcome("a", ok=False)  # [T, T, T, F] + 1 in flight
    assert book.fitness("a") == pytest.approx(4 / 5)


def test_choice_is_proportional_to_fitness_and_seeded() -> None:
    def draw(seed: int) -> list[str]:
        book = FitnessBook(FitnessPolicy(exploration=0.0, seed=seed))
        book.outcome("good", ok=True)
        for ok in (True, False, False):
            book.outcome("meh", ok=ok)
        return [book.choose(["good", "meh"], point=f"p{i}", source="x") or "" for i in range(3000)]

    picks = draw(7)
    assert picks == draw(7)
    share = Counter(picks)["good"] / len(picks)
    assert share == pytest.approx(1 / (1 + 1 / 3), abs=0.03)


def test_fitness_zero_is_never_chosen_without_exploration_but_rehabilitates_with_it() -> None:
    book = FitnessBook(FitnessPolicy(exploration=0.0))
    book.outcome("dead", ok=False)
    assert {book.choose(["ok", "dead"], point="p", source="x") for _ in range(200)} == {"ok"}
    book = FitnessBook(FitnessPolicy(exploration=0.2, seed=1))
    book.outcome("dead", ok=False)
    picks = Counter(book.choose(["ok", "dead"], point="p", source="x") for _ in range(2000))
    assert picks["dead"] == pytest.approx(2000 * 0.2 / 2, rel=0.25)
    assert all(choice["explored"] for choice in book.choices if choice["chosen"] == "dead")


def test_choices_are_recorded_and_none_when_no_candidate() -> None:
    book = FitnessBook(FitnessPolicy(exploration=0.0))
    assert book.choose([], point="p", source="x") is None
    assert book.choose(["b"], point="p1", source="a") == "b"
    assert book.choices == [
        {"point": "p1", "from": "a", "fitness": {"b": 1.0}, "explored": False, "chosen": "b"}
    ]


# --- order ---------------------------------------------------------------------------------


def spec(model: str, threads: int, device: str = "d") -> RunSpec:
    return RunSpec(
        spec_id=f"{device}-{model}-{threads}",
        experiment="e",
        device=device,
        machine_id=device,
        backend="reference",
        model=model,
        precision="f32",
        mode="throughput",
        threads=threads,
    )


def test_order_policies() -> None:
    specs = [spec(m, t) for m in ("a", "b", "c") for t in (1, 2)]
    assert order.order_points(specs, "spec", seed=0, device="d") == specs
    inter = order.order_points(specs, "interleave", seed=0, device="d")
    assert [(s.model, s.threads) for s in inter] == [
        ("a", 1), ("b", 1), ("c", 1), ("a", 2), ("b", 2), ("c", 2)
    ]  # fmt: skip
    shuffled = order.order_points(specs, "shuffle", seed=3, device="d")
    assert shuffled == order.order_points(specs, "shuffle", seed=3, device="d")
    assert sorted(s.spec_id for s in shuffled) == sorted(s.spec_id for s in specs)
    assert shuffled != order.order_points(specs, "shuffle", seed=4, device="d") or (
        shuffled != order.order_points(specs, "shuffle", seed=5, device="d")
    )


def test_unknown_order_policy_is_one_line() -> None:
    with pytest.raises(ConfigError, match=r"^policies.order: unknown order policy 'random'"):
        order.order_points([], "random", seed=0, device="d")


# --- groups --------------------------------------------------------------------------------


def config(devices: dict, resource_groups: dict | None = None) -> SweepConfig:
    return SweepConfig.model_validate(
        {
            "experiment": "e",
            "devices": devices,
            "resource_groups": resource_groups or {},
            "matrix": {},
        }
    )


def test_group_limit_defaults_to_one_and_tightest_declared_limit_wins() -> None:
    cfg = config(
        {
            "host": {"resource_group": "cpu", "max_concurrency": 4},
            "pod": {"resource_group": "cpu"},
            "pi5": {},
        }
    )
    resolved = groups.resolve(cfg)
    assert list(resolved) == ["cpu"]
    assert resolved["cpu"].members == ("host", "pod")
    assert resolved["cpu"].limit == 1
    cfg = config(
        {"host": {"resource_group": "cpu", "max_concurrency": 2}, "pod": {"resource_group": "cpu"}},
        {"cpu": {"group_max_concurrency": 3}},
    )
    assert groups.resolve(cfg)["cpu"].limit == 2
    cfg = config(
        {"host": {"resource_group": "cpu", "max_concurrency": 4}, "pod": {"resource_group": "cpu"}},
        {"cpu": {"group_max_concurrency": 3}},
    )
    assert groups.resolve(cfg)["cpu"].limit == 3


def test_device_in_two_groups_is_refused() -> None:
    with pytest.raises(ValidationError) as info:
        config({"host": {"resource_group": ["a", "b"]}})
    message = validation_message("lab.yaml", info.value)
    assert message == (
        "lab.yaml: $.devices.host.resource_group: Value error, a device is one machine and "
        "belongs to one resource group, got ['a', 'b']"
    )


def test_turn_gate_rotates_and_skips_members_that_are_not_ready() -> None:
    gate = groups.Group("g", ("a", "b", "c"), limit=1)
    everyone = lambda member: True  # noqa: E731
    assert gate.turn(everyone) == "a"
    gate.start("a")
    assert gate.turn(everyone) is None  # no free slot
    gate.finish()
    assert gate.turn(everyone) == "b"  # a just finished; it is not its turn again
    gate.start("b")
    gate.finish()
    assert gate.turn(lambda m: m != "c") == "a"
    gate.start("a")
    gate.finish()
    assert gate.turn(lambda m: False) is None
    assert gate.order == ["a", "b", "a"]


# --- lock ----------------------------------------------------------------------------------


def test_lock_is_exclusive_and_released(store: Path) -> None:
    st = Store(store)
    with lock.SweepLock(st, "exp") as held:
        data = json.loads(held.path.read_text())
        assert data["pid"] == os.getpid() and data["host"] == socket.gethostname()
        with pytest.raises(StoreError) as info:
            lock.SweepLock(st, "exp").acquire()
        message = str(info.value)
        assert "\n" not in message
        assert "experiment 'exp' is already running" in message and "bench stop exp" in message
    assert not held.path.exists()
    with lock.SweepLock(st, "exp"):
        pass


def test_stale_lock_of_a_dead_pid_on_this_host_is_taken_over(store: Path) -> None:
    st = Store(store)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    path = st.sweep_dir("exp") / "lock"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"pid": int(dead.stdout), "host": socket.gethostname()}))
    with lock.SweepLock(st, "exp") as held:
        assert "took over a stale lock" in held.warnings[0]
        assert json.loads(path.read_text())["pid"] == os.getpid()


def test_lock_of_another_host_is_respected(store: Path) -> None:
    st = Store(store)
    path = st.sweep_dir("exp") / "lock"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"pid": 1, "host": "elsewhere.invalid"}))
    with pytest.raises(StoreError, match="already running"):
        lock.SweepLock(st, "exp").acquire()


def test_stop_request_needs_a_running_sweep(store: Path) -> None:
    st = Store(store)
    with pytest.raises(StoreError, match="experiment 'exp' is not running"):
        lock.request_stop(st, "exp")
    assert not lock.stop_requested(st, "exp")
    with lock.SweepLock(st, "exp"):
        lock.request_stop(st, "exp")
        assert lock.stop_requested(st, "exp")
        lock.clear_stop(st, "exp")
        assert not lock.stop_requested(st, "exp")
