"""`bench compare` on a llama-bench history made the way users make it (`-o json`, five
repeats per test, imported with `bench migrate`): a metric's test holds only what shapes it
(ARCHITECTURE.md, Measurement identity), and a run's repeats are samples the judgement uses
(ARCHITECTURE.md, Compare)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.kit.cli import run_cli
from tests.kit.llama_history import History, Machine, import_history


def _compare(capsys: pytest.CaptureFixture[str], store: Path, *args: str) -> tuple[int, dict]:
    code, out, _ = run_cli(capsys, "--store", str(store), "compare", *args, "--format", "json")
    return code, json.loads(out)


def test_tg128_is_one_test_whatever_the_prompt_size(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    history = History(
        [Machine("m1", 900.0, 60.0, pp=(128,)), Machine("m2", 1200.0, 80.0, pp=(512,))],
        builds=[7000],
    )
    import_history(history, store, tmp_path / "files")
    code, data = _compare(capsys, store, "--by", "machine", "--a", "m1", "--b", "m2")
    assert code == 0
    tests = {(row["metric"], row["test"]) for row in data["rows"]}
    assert ("decode_tok_per_sec", "tg128") in tests
    assert not any(row["test"].startswith("pp") for row in data["rows"])  # pp128 is not pp512


def test_pp256_is_never_set_against_pp16(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    history = History(
        [Machine("m1", 900.0, 60.0, pp=(256,)), Machine("m2", 1200.0, 80.0, pp=(16,))],
        builds=[7000],
    )
    import_history(history, store, tmp_path / "files")
    for match in ("exact", "best"):
        code, data = _compare(
            capsys, store, "--by", "machine", "--a", "m1", "--b", "m2", "--match", match
        )
        assert code == 0
        metrics = {row["metric"] for row in data["rows"]}
        assert "decode_tok_per_sec" in metrics
        assert "prefill_tok_per_sec" not in metrics and "ttft_ms" not in metrics


def _stepped_history() -> History:
    """Three machines, six builds, five repeats per test with a 1.2% spread; tg128 drops
    11% from the fourth build on, everywhere; pp512 never moves."""
    machines = [
        Machine("epyc", 1500.0, 60.0),
        Machine("laptop", 400.0, 22.0, cpu_info="Intel(R) Core(TM) i7-1165G7", threads=4),
        Machine(
            "rtx", 9000.0, 160.0, gpu_info="NVIDIA GeForce RTX 4080", backends="CUDA", threads=8
        ),
    ]
    builds = [7001, 7002, 7003, 7004, 7005, 7006]

    def factor(machine: str, index: int, test: str) -> float:
        return 0.89 if test == "tg128" and index >= 3 else 1.0

    return History(machines, builds, factor=factor)


def test_a_tg128_step_between_two_builds_is_significant_and_pp_is_not(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import_history(_stepped_history(), store, tmp_path / "files")
    for machine in ("epyc", "laptop", "rtx"):
        code, data = _compare(
            capsys, store, "--by", "build", "--a", "b7003", "--b", "b7004",
            "--machine", machine, "--only-changed",
        )  # fmt: skip
        assert code == 0, machine
        changed = {(row["metric"], row["test"], row["mark"]) for row in data["rows"]}
        assert ("decode_tok_per_sec", "tg128", "-") in changed
        assert ("decode_ms_per_token", "tg128", "-") in changed  # a slower token, worse
        assert not any(row["test"].startswith("pp") for row in data["rows"])
        # every side is one run, judged on its five samples: never "?"
        code, data = _compare(
            capsys, store, "--by", "build", "--a", "b7003", "--b", "b7004", "--machine", machine
        )
        assert code == 0 and data["rows"]
        assert all(row["mark"] in ("+", "-", "~") for row in data["rows"])
        assert all(row["stats_a"]["samples"]["n"] == 5 for row in data["rows"])


def test_unchanged_builds_say_no_significant_change(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import_history(_stepped_history(), store, tmp_path / "files")
    code, _, err = run_cli(
        capsys, "--store", str(store), "compare", "--by", "build", "--a", "b7004", "--b",
        "b7005", "--machine", "epyc", "--only-changed",
    )  # fmt: skip
    assert code == 1 and "no significant change" in err


def test_two_machines_at_their_best_settings_show_marks(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    history = History(
        [Machine("m1", 1000.0, 60.0, threads=8), Machine("m2", 1250.0, 82.0, threads=16)],
        builds=[7000],
    )
    import_history(history, store, tmp_path / "files")
    code, data = _compare(
        capsys, store, "--by", "machine", "--a", "m1", "--b", "m2", "--match", "best"
    )
    assert code == 0
    marks = {(row["metric"], row["test"]): row["mark"] for row in data["rows"]}
    assert marks[("prefill_tok_per_sec", "pp512")] == "+"
    assert marks[("decode_tok_per_sec", "tg128")] == "+"
    assert "?" not in marks.values()
