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
