"""Settling one conflict in two clones (ARCHITECTURE.md, The catalog: merge): whatever each
clone keeps and in whatever order the clones merge, every clone ends with the same answer,
and the run is never absent from every answer (opposite choices void their round and the run
is a conflict again, which a later round settles)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchlab.catalog.merge import head_document, merge_heads
from benchlab.catalog.order import (
    CONFLICT,
    REJECTED,
    copies,
    copy_digest,
    effective_rejections,
    rejected_by_run,
    settle,
    without_digests,
    without_rejected,
)
from benchlab.catalog.resolve import judge
from benchlab.errors import QueryError

RUN = "m0-model-q8-batch-abcdef01-20250106T120000Z"


def copy(peak: float) -> dict[str, Any]:
    return {
        "run_id": RUN,
        "machine_id": "m0",
        "timestamp": "2025-01-06T12:00:00Z",
        "model": "SmolLM2-135M",
        "precision": "q8",
        "status": "ok",
        "tags": [],
        "peak_tok_per_sec": peak,
    }


Clone = tuple[dict[str, Any] | None, dict[str, Any]]
"""(the shard line of the run, or None where it left the shard; the head)."""


def start(n: int) -> Clone:
    return settle([copy(10.0 * (i + 1)) for i in range(n)]), head_document({})


def resolve(clone: Clone, keep: int) -> Clone:
    """`resolve_v3` on memory: the judgement, then the rejected copies out of the line."""
    line, head = clone
    found = [line] if line is not None else []
    try:
        _, _, judged = judge(RUN, found, head.get(REJECTED, []), keep)
    except QueryError:
        return clone  # not in conflict, or no such copy: refused, nothing written
    present = {copy_digest(c) for held in found for c in copies(held)}
    gone = effective_rejections(rejected_by_run(judged)[RUN], present)
    kept = without_digests(line, gone) if line is not None else None
    return kept, head_document({}, (), (), judged)


def pull(ours: Clone, theirs: Clone) -> Clone:
    """A git merge with the driver: the shard lines' union, the heads' union."""
    held = [line for line in (ours[0], theirs[0]) if line is not None]
    return (settle(held) if held else None), merge_heads(ours[1], theirs[1])


def answer(clone: Clone) -> dict[str, Any] | None:
    """What the readers make of the run (`read.load_catalog`): its line less the copies in
    force rejected; a conflict line is shown as a conflict (validate names it)."""
    line, head = clone
    if line is None:
        return None
    return without_rejected(line, rejected_by_run(head.get(REJECTED, [])).get(RUN, {}))


steps = st.lists(
    st.one_of(st.integers(1, 3).map(lambda k: ("keep", k)), st.just(("pull", 0))), max_size=6
)


@settings(max_examples=300, deadline=None)
@given(st.integers(2, 3), steps, steps, st.booleans())
def test_any_resolves_in_two_clones_merge_to_one_answer_that_shows_the_run(
    n: int, a_steps: list[tuple[str, int]], b_steps: list[tuple[str, int]], a_first: bool
) -> None:
    a = b = start(n)
    for (a_op, a_keep), (b_op, b_keep) in zip(
        a_steps + [("", 0)] * len(b_steps), b_steps + [("", 0)] * len(a_steps), strict=False
    ):
        a_next = resolve(a, a_keep) if a_op == "keep" else pull(a, b) if a_op == "pull" else a
        b_next = resolve(b, b_keep) if b_op == "keep" else pull(b, a) if b_op == "pull" else b
        a, b = a_next, b_next
        for clone in (a, b):
            assert answer(clone) is not None  # never absent from every answer
    # Either clone may pull first; both end with the same bytes and the same answer.
    if a_first:
        a = pull(a, b)
        b = pull(b, a)
    else:
        b = pull(b, a)
        a = pull(a, b)
    assert a == b
    assert pull(a, b) == pull(b, a) == a
    final = answer(a)
    assert final is not None
    # Settled again from either clone, one round later, the choice holds everywhere.
    if CONFLICT in final:
        settled = pull(b, resolve(a, 1))
        assert answer(settled) == final[CONFLICT][0]


def test_opposite_choices_void_their_round_and_a_later_round_settles_it() -> None:
    a = b = start(2)
    a, b = resolve(a, 1), resolve(b, 2)
    assert answer(a) == copy(10.0) and answer(b) == copy(20.0)
    a, b = pull(a, b), pull(b, a)
    assert a == b
    assert len(a[1][REJECTED]) == 2  # both digests rejected in round 0 ...
    shown = answer(a)
    assert shown is not None and CONFLICT in shown  # ... so the round voids itself
    a = resolve(a, 2)
    assert sorted(item.count("@") for item in a[1][REJECTED]) == [1, 1, 2]  # round 1
    assert answer(a) == copy(20.0)
    assert answer(pull(b, a)) == copy(20.0)


STORE = Path("experiments") / "benchmark"


@pytest.mark.integration
def test_two_clones_resolving_one_conflict_differently_keep_the_run_in_view(
    tmp_path: Path,
    make_fleet: Callable[..., list[str]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Real git clones with the merge driver: alice keeps copy 1, bob copy 2, each pulls
    the other. Before, both digests ended in `rejected` and the run vanished (validate:
    all valid; show: not in the catalog)."""
    from tests.catalog.test_git_merge import (
        bench,
        clone,
        commit,
        git,
        merge_both_ways,
        public_bytes,
        seed_origin,
        tamper,
    )

    from benchlab.catalog.read import load_catalog

    origin = seed_origin(tmp_path, make_fleet, [0, 2])
    alice, bob = clone(origin, "alice"), clone(origin, "bob")
    for repo in (alice, bob):
        [shared] = make_fleet(repo / STORE, 1, seed=1, first=3, step_s=STEP)
        assert bench(repo, "catalog", "build") == 0
    tamper(bob, shared)
    commit(alice, "run 3")
    commit(bob, "run 3, measured again")
    merge_both_ways(alice, bob)
    assert bench(alice, "catalog", "resolve", shared, "--keep", "1") == 0
    assert bench(bob, "catalog", "resolve", shared, "--keep", "2") == 0
    commit(alice, "keep 1")
    commit(bob, "keep 2")
    merge_both_ways(alice, bob)
    assert public_bytes(alice) == public_bytes(bob)
    for repo in (alice, bob):
        capsys.readouterr()
        assert bench(repo, "catalog", "validate") == 1  # a conflict again, named
        assert shared in capsys.readouterr().err
    # Settled once more by one clone, in a later round: every clone shows the copy kept.
    assert bench(bob, "catalog", "resolve", shared, "--keep", "2") == 0
    commit(bob, "keep 2, round 1")
    git(alice, "pull", "-q", "--no-rebase", str(bob), "main")
    for repo in (alice, bob):
        assert bench(repo, "catalog", "validate") == 0
        assert bench(repo, "show", shared) == 0
        assert any(e["run_id"] == shared for e in load_catalog(repo / STORE / "catalog.json").runs)


STEP = 86400
