"""Property: in a group of k members with n points each, no member ever completes two points
more than any other member that still has work (round robin is an experimental control)."""

from __future__ import annotations

from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.kit.scheduler import LightRunner, fleet_factory
from tests.scheduler.lab import make_config

from benchlab.devices.fake import FakeBehaviour
from benchlab.sweep.scheduler import run_sweep_concurrent


def check_fair(completed: list[str], members: list[str], n: int) -> None:
    counts: Counter[str] = Counter()
    for device in completed:
        counts[device] += 1
        for a in members:
            for b in members:
                if counts[b] < n:  # b still has work
                    assert counts[a] - counts[b] < 2, (completed, a, b)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    k=st.integers(min_value=2, max_value=4),
    n=st.integers(min_value=1, max_value=4),
    concurrency=st.lists(st.integers(min_value=1, max_value=3), min_size=4, max_size=4),
    duration=st.sampled_from([0.0, 0.001]),
)
def test_group_members_take_turns(
    tmp_path_factory, k: int, n: int, concurrency: list[int], duration: float
) -> None:  # type: ignore[no-untyped-def]
    store = tmp_path_factory.mktemp("rr") / "store"
    store.mkdir()
    members = [f"m{i}" for i in range(k)]
    devices = {
        m: {"resource_group": "g", "max_concurrency": concurrency[i]} for i, m in enumerate(members)
    }
    config = make_config(devices, models=[f"x{j}" for j in range(n)], threads=(1,))
    runner = LightRunner()
    fleet = {m: FakeBehaviour(duration_s=duration) for m in members}
    result = run_sweep_concurrent(
        store,
        config,
        None,
        _runner=runner,
        _journal=None,
        _transport_factory=fleet_factory(fleet),
        _measure_clocks=False,
    )
    assert len(result.records) == k * n
    assert Counter(runner.completed) == {m: n for m in members}
    check_fair(runner.completed, members, n)


def test_the_checker_catches_a_member_running_ahead() -> None:
    import pytest

    with pytest.raises(AssertionError):
        check_fair(["a", "a", "b", "b"], ["a", "b"], 2)
    check_fair(["a", "b", "a", "b"], ["a", "b"], 2)
