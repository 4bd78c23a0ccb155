"""One level per series and metric (ARCHITECTURE.md, The current level): `bench table` in
every format gives each metric at the level `bench best --metric M --by series` gives, on a
llama-bench history whose decode and prefill step at different builds."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from tests.kit.cli import run_cli
from tests.kit.llama_history import History, Machine, import_history

METRICS = ("prefill_tok_per_sec", "decode_tok_per_sec")


def _history() -> History:
    """Twelve builds on one machine: tg128 drops 11% from build 3 on; pp512 drops 15% at
    build 6 and a later build (9) fixes it."""

    def factor(machine: str, index: int, test: str) -> float:
        if test == "tg128":
            return 0.89 if index >= 3 else 1.0
        return 0.85 if 6 <= index < 9 else 1.0

    return History([Machine("box", 600.0, 40.0)], list(range(7001, 7013)), factor=factor)


def test_table_and_best_give_one_level_per_series_and_metric(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import_history(_history(), store, tmp_path / "files")
    base = ("--store", str(store))
    best = {}
    for metric in METRICS:
        code, out, _ = run_cli(
            capsys, *base, "best", "--metric", metric, "--by", "series", "--format", "json"
        )
        [row] = json.loads(out)
        assert code == 0
        best[metric] = row["level"]["value"]
    # prefill's own level: the runs since its fix, not averaged across the regression
    assert best["prefill_tok_per_sec"] > 0.97 * 600.0
    code, out, _ = run_cli(capsys, *base, "table", "--format", "json")
    [row] = json.loads(out)
    for metric in METRICS:
        assert row[metric] == pytest.approx(best[metric])
        assert row["levels"][metric] == pytest.approx(best[metric])
    code, out, _ = run_cli(capsys, *base, "table", "--format", "csv")
    [line] = csv.DictReader(io.StringIO(out))
    assert float(line["prefill_tok_per_sec"]) == pytest.approx(
        best["prefill_tok_per_sec"], abs=0.01
    )
    assert float(line["decode_tok_per_sec"]) == pytest.approx(best["decode_tok_per_sec"], abs=0.01)
    code, out, _ = run_cli(capsys, *base, "table")
    assert f"{best['prefill_tok_per_sec']:.2f}" in out
    assert f"{best['decode_tok_per_sec']:.2f}" in out
