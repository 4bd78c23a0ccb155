"""MBU of real llama-bench results: the RTX 3090 Ti and RTX 4080 outputs llama.cpp's own
llama-bench README publishes (tests/data/llama_bench/README.md), imported with `bench
migrate` as a user would, judged against the spec-sheet bandwidth the import's `gpu_info`
finds (ARCHITECTURE.md, "How close to the hardware")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchlab.cli import main

DATA = Path(__file__).parent.parent / "data" / "llama_bench"
PUBLISHED = {
    # machine: (fixture, GPU's spec-sheet GB/s, tg128 t/s as published, model_size bytes)
    "rtx3090ti": ("b1275-cuda-2023-09.json", 1008.0, 130.965708, 3_825_065_984),
    "rtx4080": ("b5163-cuda-2025-04.json", 716.8, 118.881588, 4_677_120_000),
}


@pytest.fixture
def imported(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Path:
    """The store, with both published results migrated and its catalog built."""
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    for machine, (name, *_) in PUBLISHED.items():
        assert main(["migrate", str(DATA / name), "--machine-id", machine]) == 0
    assert main(["catalog", "build"]) == 0
    capsys.readouterr()
    return store


def test_published_results_get_their_mbu_from_the_spec_sheet(
    imported: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["table", "--format", "json"]) == 0
    rows = {row["machine_id"]: row for row in json.loads(capsys.readouterr().out)}
    for machine, (_, gbs, decode, size) in PUBLISHED.items():
        row = rows[machine]
        assert row["decode_tok_per_sec"] == pytest.approx(decode)
        assert row["model_size"] == size
        assert 0 < row["mbu_pct"] <= 100
        assert row["mbu_pct"] == pytest.approx(decode * size / (gbs * 1e9) * 100, abs=0.05)
        assert row["impossible"] is False
    # llama 7B Q4_0 on the 3090 Ti (build b1275, 2023): half its bandwidth.
    assert rows["rtx3090ti"]["mbu_pct"] == pytest.approx(49.7, abs=0.05)
    # qwen2 7B Q4_K_M on the 4080 (build b5163, 2025; `-ngl -1` offloads every layer).
    assert rows["rtx4080"]["mbu_pct"] == pytest.approx(77.6, abs=0.05)


def test_machines_show_the_spec_sheet_figure_an_import_is_judged_by(
    imported: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["machines", "--format", "json"]) == 0
    rows = {row["machine"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["rtx3090ti"]["gpu_mem_bandwidth"]["gbs"] == 1008
    assert rows["rtx4080"]["gpu_mem_bandwidth"] == {
        "gbs": 716.8, "source": "spec", "method": "spec sheet: rtx 4080", "date": None
    }  # fmt: skip
    assert rows["rtx4080"]["mem_bandwidth"] is None  # a Ryzen 7800X3D: not in the table
