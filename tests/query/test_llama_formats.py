"""One level per series and metric in every output format (ARCHITECTURE.md, The current
level): over a llama-bench history made as users make one (tests/kit/llama_steps: twelve
machines, thirteen builds, a decode step, a prefill step in effect and one fixed), `bench
table` and `bench best --metric M --by series` print the same level for each series and
metric in text, csv, json and markdown."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from tests.kit.cli import run_cli
from tests.kit.llama_steps import MACHINES, PLANTED, make_repo_store

METRICS = ("prefill_tok_per_sec", "decode_tok_per_sec")
TABLE_HEAD = {"prefill_tok_per_sec": "prefill tok/s", "decode_tok_per_sec": "decode tok/s"}


@pytest.fixture(scope="module")
def llama_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_repo_store(tmp_path_factory.mktemp("llama-formats"))


def _rows(fmt: str, out: str) -> list[dict[str, str]]:
    """The rows of a text, csv or markdown table as {header: cell}."""
    if fmt == "csv":
        return list(csv.DictReader(io.StringIO(out)))
    lines = [line for line in out.splitlines() if line.strip()]
    if fmt == "markdown":
        cells = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines
                 if line.startswith("|")]  # fmt: skip
        return [dict(zip(cells[0], row, strict=True)) for row in cells[2:]]
    # aligned text: the dashes under the header give each column's span
    head, rule = lines[0], lines[1]
    spans, start = [], 0
    for dashes in rule.split("  "):
        if dashes:
            at = rule.index(dashes, start)
            spans.append((at, at + len(dashes)))
            start = at + len(dashes)
    names = [head[a:b].strip() for a, b in spans]
    rows = []
    rows = [{n: line[a:b].strip() for n, (a, b) in zip(names, spans, strict=True)}
            for line in lines[2:]]  # fmt: skip
    return [r for r in rows if r.get("machine") in MACHINES]  # not the note under the table


def _best_levels(store: Path, capsys: pytest.CaptureFixture[str], metric: str) -> dict[str, float]:
    code, out, _ = run_cli(
        capsys, "--store", str(store), "best", "--metric", metric, "--by", "series",
        "--format", "json",
    )  # fmt: skip
    assert code == 0
    rows = json.loads(out)
    for row in rows:  # the json's metric field is the level, the newest run's value beside it
        assert row[metric] == row["level"]["value"]
        assert set(row["newest"]) == {metric}
    return {row["machine_id"]: row["level"]["value"] for row in rows}


@pytest.mark.parametrize("fmt", ["table", "csv", "json", "markdown"])
def test_table_and_best_print_one_level_in_every_format(
    llama_store: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    base = ("--store", str(llama_store))
    for metric in METRICS:
        levels = _best_levels(llama_store, capsys, metric)
        assert sorted(levels) == sorted(MACHINES)  # one series per machine
        # a prefill step's level is its own: the runs since it (or since its fix)
        for step in PLANTED:
            if step.metric == metric and step.fixed_at is None:
                others = [v for m, v in levels.items() if m != step.machine]
                assert levels[step.machine] < max(others)
        code, out, _ = run_cli(capsys, *base, "table", "--format", fmt, "--wide")
        assert code == 0
        code_b, out_b, _ = run_cli(
            capsys, *base, "best", "--metric", metric, "--by", "series", "--format", fmt,
            "--wide",
        )  # fmt: skip
        assert code_b == 0
        if fmt == "json":
            table = {r["machine_id"]: r[metric] for r in json.loads(out)}
            best = {r["machine_id"]: r[metric] for r in json.loads(out_b)}
            assert table == pytest.approx(levels) and best == pytest.approx(levels)
            continue
        column = metric if fmt == "csv" else TABLE_HEAD[metric]
        best_column = metric if fmt == "csv" else f"{metric} (level)"
        key = "machine_id" if fmt == "csv" else "machine"
        table = {r[key]: float(r[column]) for r in _rows(fmt, out)}
        best = {r[key]: float(r[best_column]) for r in _rows(fmt, out_b)}
        assert sorted(table) == sorted(best) == sorted(MACHINES)
        places = 1e-9 if fmt == "csv" else 0.0051  # text and markdown print two decimals
        for machine, level in levels.items():
            assert table[machine] == pytest.approx(level, rel=1e-12, abs=places), machine
            assert best[machine] == pytest.approx(level, rel=1e-12, abs=places), machine
