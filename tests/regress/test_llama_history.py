"""`bench regression` over a llama-bench history made as users make it (tests/kit/llama_steps):
every metric a series carries is its own history, so a step in prefill alone is found and
gated without `--metric`, and one a later build fixed is reported with its fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.kit.llama_steps import MACHINES, PLANTED, first_bad_build, make_repo_store

from benchlab.cli import main


@pytest.fixture(scope="module")
def llama_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_repo_store(tmp_path_factory.mktemp("llama-steps"))


def _json(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, list[dict]]:
    capsys.readouterr()
    code = main([*argv, "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_every_planted_step_is_found_without_metric(
    llama_store: Path, capsys: pytest.CaptureFixture
) -> None:
    code, steps = _json(capsys, "--store", str(llama_store), "regression", "--detect")
    assert code == 1
    confirmed = [s for s in steps if s["status"] == "confirmed"]
    found = {(s["machine_id"], s["metric"], s["kind"], s["version_after"].split()[0], s["open"])
             for s in confirmed}  # fmt: skip
    expected = set()
    for step in PLANTED:
        open_now = step.fixed_at is None
        expected.add((step.machine, step.metric, "regression", f"b{first_bad_build(step)}",
                      open_now))  # fmt: skip
        if step.fixed_at is not None:  # the fix, reported as a step of its own
            from tests.kit.llama_steps import BUILDS

            expected.add((step.machine, step.metric, "improvement",
                          f"b{BUILDS[step.fixed_at]}", True))  # fmt: skip
    assert found == expected, found  # every planted step, and nothing else
    for s in confirmed:
        size = next(p.size for p in PLANTED if (p.machine, p.metric) == (s["machine_id"],
                                                                          s["metric"]))  # fmt: skip
        assert abs(abs(s["change"]) / 100 - abs(size)) < 0.05 or s["kind"] == "improvement"


def test_the_gate_fails_the_machine_with_a_prefill_only_regression(
    llama_store: Path, capsys: pytest.CaptureFixture
) -> None:
    base = ("--store", str(llama_store), "regression", "--machine")
    code, rows = _json(capsys, *base, "lab07")
    assert code == 1
    by_metric = {row["metric"]: row for row in rows}
    assert by_metric["prefill_tok_per_sec"]["regression"]
    assert not by_metric["decode_tok_per_sec"]["regression"]  # prefill alone
    assert -17 < by_metric["prefill_tok_per_sec"]["change"] < -13
    # The machine whose prefill regression a later build fixed, and a quiet one, pass.
    assert _json(capsys, *base, "lab10")[0] == 0
    assert _json(capsys, *base, MACHINES[0])[0] == 0
    # Asked for decode only, lab07 passes: the default judges every metric.
    assert _json(capsys, *base, "lab07", "--metric", "decode_tok_per_sec")[0] == 0
