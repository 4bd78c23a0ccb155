"""MFU beside prefill (ARCHITECTURE.md, "How close to the hardware"): the peak compute
table, `bench machines set --peak-tflops`, the published llama-bench results judged against
their cards' spec-sheet peaks, "not measured" without a figure, and the prefill physics
check."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.kit.catalog import write_v3_catalog
from tests.kit.entries import make_entry

from benchlab.cli import main
from benchlab.machines.compute import spec_sheet
from benchlab.machines.roofline import Shape, flops_per_token

DATA = Path(__file__).parent.parent / "data" / "llama_bench"


def test_the_spec_table_matches_the_longest_name_and_refuses_laptops() -> None:
    assert spec_sheet("NVIDIA GeForce RTX 4070 Ti SUPER") == ("rtx 4070 ti super", 176.4)
    assert spec_sheet("NVIDIA GeForce RTX 4070 Ti") == ("rtx 4070 ti", 160.4)
    assert spec_sheet("NVIDIA GeForce RTX 3090 Ti") == ("rtx 3090 ti", 160.0)
    assert spec_sheet("NVIDIA A100-SXM4-80GB") == ("a100-sxm4-80gb", 312)
    assert spec_sheet("NVIDIA H200 NVL") == ("h200 nvl", 835.5)
    assert spec_sheet("NVIDIA GeForce RTX 4090 Laptop GPU") is None
    assert spec_sheet("Intel(R) Arc(TM) B580 Graphics") is None  # no figure trusted
    assert spec_sheet("AMD Ryzen 7 7800X3D 8-Core Processor") is None
    assert spec_sheet(None) is None


def test_flops_per_token_count_active_parameters_and_known_attention() -> None:
    assert flops_per_token(7_000_000_000) == 14e9
    assert flops_per_token(30_000_000_000, model="qwen3moe 30B.A3B Q4_K - Medium") == (
        pytest.approx(6e9)
    )
    shape = Shape(layers=2, kv_heads=1, head_dim=64)
    # 4 x 2 layers x 3 heads x 64 x 10.5 tokens of mean context on top of 2 x 1,000.
    assert flops_per_token(1000, shape=shape, heads=3, context=10.5) == 2000 + 4 * 2 * 3 * 64 * 10.5
    assert flops_per_token(None) is None and flops_per_token(0) is None


def test_set_peak_tflops_round_trip_and_bad_input(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    assert main(["machines", "set", "lab", "--peak-tflops", "82.6"]) == 0
    assert "lab: peak 82.6 TFLOP/s (declared " in capsys.readouterr().out
    assert main(["machines", "--format", "json"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert row["peak_tflops"]["tflops"] == 82.6 and row["peak_tflops"]["source"] == "declared"
    assert row["mem_bandwidth"] is None  # one flag sets one figure
    for value, why in (
        ("0", "expected a number above 0, got '0'"),
        ("abc", "expected a number above 0, got 'abc'"),
        ("1e6", "expected a number above 0, at most 100,000, got '1e6'"),
    ):
        assert main(["machines", "set", "lab", "--peak-tflops", value]) == 2
        err = capsys.readouterr().err
        assert err.strip().splitlines()[-1].endswith(why) and "Traceback" not in err
    # the bandwidth's bound too: it used to traceback
    assert main(["machines", "set", "lab", "--mem-bandwidth", "1e9"]) == 2
    assert "at most 100,000" in capsys.readouterr().err
    assert main(["machines", "set", "lab"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--peak-tflops TFLOPS" in err


def test_published_results_get_their_mfu_from_the_spec_sheet(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """llama.cpp's README results: pp512 2,411 t/s of llama 7B (6.74 B parameters) on the
    3090 Ti (160 TFLOP/s) and 7,100 t/s of Qwen2.5 7B (7.62 B) on the 4080 (194.9)."""
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    published = {
        "rtx3090ti": ("b1275-cuda-2023-09.json", 160.0, 2410.974041, 6_738_415_616, 20.3),
        "rtx4080": ("b5163-cuda-2025-04.json", 194.9, 7100.002165, 7_615_616_512, 55.5),
    }
    for machine, (name, *_) in published.items():
        assert main(["migrate", str(DATA / name), "--machine-id", machine]) == 0
    assert main(["catalog", "build"]) == 0
    capsys.readouterr()
    assert main(["table", "--format", "json"]) == 0
    rows = {row["machine_id"]: row for row in json.loads(capsys.readouterr().out)}
    for machine, (_, peak, prefill, params, mfu) in published.items():
        row = rows[machine]
        assert row["model_params"] == params and row["prefill_tok_per_sec"] == prefill
        assert 0 < row["mfu_pct"] <= 100
        assert row["mfu_pct"] == pytest.approx(prefill * 2 * params / (peak * 1e12) * 100, abs=0.05)
        assert row["mfu_pct"] == mfu and row["impossible"] is False
    assert main(["table", "--wide"]) == 0
    assert "MFU %" in capsys.readouterr().out


SIZE, PARAMS = 4_000_000_000, 7_000_000_000


def _fleet(store: Path) -> None:
    """A 7 B model offloaded on three machines: `real` (100 TFLOP/s, 2,000 t/s: 28% MFU),
    `fake` (100 TFLOP/s, 20,000 t/s: 10x the first, 280%), `bare` (a GPU without a figure)."""
    entries = [
        make_entry(f"{m}-r1", m, "2026-12-01T00:00:00Z", model="llama 7B Q4_0",
                   model_id="llama-7b", model_size=SIZE, model_params=PARAMS,
                   prefill_tok_per_sec=prefill, decode_tok_per_sec=None, gpu_layers=99,
                   backend="llama-bench", tags=["kernel"], batch_sizes=None, mode=None)
        for m, prefill in (("real", 2000.0), ("fake", 20000.0), ("bare", 1500.0))
    ]  # fmt: skip
    write_v3_catalog(store, entries)
    for machine in ("real", "fake"):
        assert main(["machines", "set", machine, "--peak-tflops", "100"]) == 0


def test_mfu_not_measured_and_an_impossible_prefill(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    _fleet(store)
    capsys.readouterr()
    assert main(["table", "--model", "llama-7b", "--format", "json"]) == 0
    rows = {r["machine_id"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["real"]["mfu_pct"] == 28.0 and rows["real"]["impossible"] is False
    assert rows["bare"]["mfu_pct"] is None  # not measured: null, never 0
    assert rows["fake"]["mfu_pct"] == 280.0 and rows["fake"]["impossible"] is True
    assert main(["table", "--model", "llama-7b", "--format", "csv"]) == 0
    text = capsys.readouterr().out
    assert "not measured" in text and "impossible" in text

    argv = ["best", "--model", "llama-7b", "--metric", "prefill_tok_per_sec", "--by", "machine"]
    assert main([*argv, "--format", "json"]) == 0
    out, err = capsys.readouterr()
    ranked = {row["machine_id"]: row for row in json.loads(out)}
    assert set(ranked) == {"real", "bare"}  # the impossible one is never best
    assert ranked["real"]["mfu_pct"] == 28.0
    assert "1 series set aside: their prefill beats their machine's peak compute" in err


def test_validate_names_an_impossible_prefill(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`bench catalog validate` judges prefill as it judges decode: fake's 20,000 t/s of a
    7 B model (14 GFLOPs a token) on 100 TFLOP/s is over 1.1 x its 7,142.9 t/s ceiling."""
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    _fleet(store)
    capsys.readouterr()
    assert main(["catalog", "validate"]) == 1
    err = capsys.readouterr().err
    assert (
        "error: impossible: fake-r1: prefill 20,000.0 t/s, over 1.1 x its ceiling 7,142.9 t/s "
        "at 100 TFLOP/s (declared " in err
    )
    assert "impossible: real-r1" not in err and "impossible: bare-r1" not in err
    assert "catalog: 1 runs prefill faster than their machine's peak compute allows" in err
    assert main(["catalog", "validate", "--format", "json"]) == 1
    out = json.loads(capsys.readouterr().out)
    [found] = out["impossible"]
    assert found["run_id"] == "fake-r1" and found["metric"] == "prefill_tok_per_sec"
    assert found["tok_per_sec"] == 20000.0 and found["ceiling_tok_per_sec"] == 7142.9
    assert found["figure"].startswith("100 TFLOP/s (declared ") and out["conflicts"] == []
