"""What is published stays re-checked, under the policy of the store the command works on
(ARCHITECTURE.md, Publishing and redaction): the head records the redaction policy's
version; a build that finds it stale holds every published line (this clone's runs and
lines pulled from others alike) to today's policy; and a build through the Python API
takes the built store's redaction.yaml, wherever it is called from."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from benchlab.catalog import build as catalog_build
from benchlab.catalog.format import POLICY
from benchlab.catalog.merge import merge_heads
from benchlab.catalog.published import policy_version, withheld_lines
from benchlab.catalog.shards import iter_shards
from benchlab.layout import Store
from benchlab.redact.policy import load_policy

TELL = "tg32"  # a test name every synthetic run records: a "host" once redaction.yaml says so
PATTERN = f'patterns:\n  - name: lab-node\n    class: host\n    regex: "{TELL}"\n'


def published(store: Path) -> str:
    return "".join(path.read_text() for _, path in iter_shards(store / "catalog.json"))


def head(store: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((store / "catalog.json").read_text())
    return data


def test_a_policy_change_rechecks_published_lines_on_the_next_incremental_build(
    store: Path, make_fleet: Callable[..., list[str]]
) -> None:
    make_fleet(store, 8, seed=3, step_s=3600)
    catalog_build.build(Store(store))
    assert TELL in published(store)
    assert head(store)[POLICY] == policy_version(load_policy(store))
    # One machine's run dirs go: its lines are now held only as pulled lines are.
    machines = sorted((store / "runs" / "by-machine").iterdir())
    shutil.rmtree(machines[0])
    (store / "redaction.yaml").write_text(PATTERN)

    result = catalog_build.build(Store(store))

    assert TELL not in published(store)
    assert head(store)[POLICY] == policy_version(load_policy(store))
    assert not list(withheld_lines(store, load_policy(store)))
    assert result.total == 8  # withheld in part, not dropped
    assert any("changed redaction policy" in w for w in result.warnings), result.warnings


def test_a_line_whose_id_the_policy_now_refuses_is_withheld_whole_and_named(
    store: Path, make_fleet: Callable[..., list[str]]
) -> None:
    make_fleet(store, 6, seed=3, step_s=3600)
    catalog_build.build(Store(store))
    machine = sorted((store / "runs" / "by-machine").iterdir())[0].name
    shutil.rmtree(store / "runs" / "by-machine" / machine)
    (store / "redaction.yaml").write_text(
        f'patterns:\n  - name: lab-node\n    class: host\n    regex: "{machine}"\n'
    )

    result = catalog_build.build(Store(store))

    assert f'"machine_id":"{machine}"' not in published(store)
    assert any(machine in w and "withheld" in w for w in result.warnings), result.warnings


def test_heads_checked_under_different_policies_merge_to_a_head_that_is_checked_again() -> None:
    base = {"$schema": "benchmark/catalog.v3", "machines": {}}
    same = merge_heads({**base, POLICY: "0" * 16}, {**base, POLICY: "0" * 16})
    assert same[POLICY] == "0" * 16
    for a, b in ((("0" * 16), ("1" * 16)), (("1" * 16), ("0" * 16))):
        assert POLICY not in merge_heads({**base, POLICY: a}, {**base, POLICY: b})
    assert POLICY not in merge_heads({**base, POLICY: "0" * 16}, base)


def test_a_build_through_the_api_takes_the_built_stores_policy_not_the_cwds(
    store: Path,
    make_fleet: Callable[..., list[str]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    make_fleet(store, 6, seed=3, step_s=3600)
    (store / "redaction.yaml").write_text(PATTERN)
    elsewhere = tmp_path / "elsewhere" / "experiments" / "benchmark"
    elsewhere.mkdir(parents=True)  # a store of its own here, whose policy knows no such host
    monkeypatch.chdir(elsewhere.parent.parent)

    catalog_build.build(Store(store), full=True, jobs=1)

    assert TELL not in published(store)
    assert not (elsewhere / "catalog.json").exists()
