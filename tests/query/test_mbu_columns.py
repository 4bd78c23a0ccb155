"""MBU beside decode in `bench table` and `bench compare` (ARCHITECTURE.md, "How close to
the hardware"): a machine without a bandwidth figure reads "not measured", never 0, and null
in json; a run faster than its machine's bandwidth allows is marked impossible."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from tests.kit.catalog import write_v3_catalog
from tests.kit.entries import make_entry

from benchlab.cli import main

SIZE = 4_000_000_000


def _fleet(store: Path) -> None:
    """One 4 GB model on three machines: `fast` (400 GB/s, 70 t/s: 70% MBU), `fake` (100
    GB/s, 90 t/s: over its 25 t/s ceiling), `far` (no figure at all); `fast` also ran build
    b2 at 80 t/s (80%)."""
    entries = [
        make_entry(f"{m}-{b}", m, f"2026-12-0{day}T00:00:00Z", model="llama 7B Q4_0",
                   model_id="llama-7b", model_size=SIZE, decode_tok_per_sec=decode,
                   backend_version=f"b{n} ({b})", backend_build=n, backend_commit=b,
                   backend="llama-bench", tags=["kernel"],
                   batch_sizes=None, mode=None)
        for m, b, n, day, decode in (
            ("fast", "aaaaaaa", 1, 1, 70.0), ("fake", "aaaaaaa", 1, 1, 90.0),
            ("far", "aaaaaaa", 1, 1, 20.0), ("fast", "bbbbbbb", 2, 2, 80.0),
        )
    ]  # fmt: skip
    write_v3_catalog(store, entries)
    for machine, gbs in (("fast", 400), ("fake", 100)):
        assert main(["machines", "set", machine, "--mem-bandwidth", str(gbs)]) == 0


def _table(capsys: pytest.CaptureFixture[str], fmt: str) -> str:
    capsys.readouterr()
    assert main(["table", "--model", "llama-7b", "--format", fmt, "--wide"]) == 0
    return capsys.readouterr().out


def test_table_shows_mbu_in_every_format(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    _fleet(store)
    rows = {r["machine_id"]: r for r in json.loads(_table(capsys, "json"))}
    # fast's level is the mean of its two builds' runs, 75 t/s: MBU at the level, not 80%.
    assert rows["fast"]["mbu_pct"] == 75.0 and rows["fast"]["impossible"] is False
    assert rows["far"]["mbu_pct"] is None  # not measured: null, never 0
    assert rows["fake"]["impossible"] is True
    assert main(["table", "--model", "llama-7b", "--ever", "--format", "json"]) == 0
    ever = {r["machine_id"]: r for r in json.loads(capsys.readouterr().out)}
    assert ever["fast"]["mbu_pct"] == 80.0  # the best single run's own

    table = csv.DictReader(io.StringIO(_table(capsys, "csv")))
    by_machine = {r["machine_id"]: r for r in table}
    assert by_machine["far"]["mbu_pct"] == "not measured"
    assert by_machine["fast"]["mbu_pct"] == "75.0"
    assert by_machine["fake"]["physics"] == "impossible"

    text = _table(capsys, "table")
    far = next(line for line in text.splitlines() if line.startswith("far "))
    assert "not measured" in far and " 0.00 " not in far
    assert "MBU %" in text and "impossible" in text
    markdown = _table(capsys, "markdown")
    assert "| MBU % |" in markdown and "| 75.00 |" in markdown and "| not measured |" in markdown


def test_compare_shows_each_sides_mbu(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    _fleet(store)
    capsys.readouterr()
    argv = ["compare", "--run-id", "fast-aaaaaaa", "--run-id", "fast-bbbbbbb", "--run-id"]
    assert main([*argv, "far-aaaaaaa", "--format", "json"]) == 0
    metrics = {m["metric"]: m for m in json.loads(capsys.readouterr().out)["metrics"]}
    assert metrics["mbu_pct"]["values"] == [70.0, 80.0, None]
    assert main([*argv, "far-aaaaaaa"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("mbu_pct"))
    assert line.split() == ["mbu_pct", "70.00", "80.00", "1.14x", "not", "measured", "-"]

    by_build = ["compare", "--by", "build", "--model", "llama-7b"]
    assert main([*by_build, "--format", "json"]) == 0
    [row] = [r for r in json.loads(capsys.readouterr().out)["rows"] if r["machine_id"] == "fast"]
    assert (row["mbu_a"], row["mbu_b"]) == (70.0, 80.0)
    assert main(by_build) == 0
    out = capsys.readouterr().out
    assert "MBU % b1 (aaaaaaa)" in out and "MBU % b2 (bbbbbbb)" in out
