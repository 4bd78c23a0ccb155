"""The roofline's arithmetic (ARCHITECTURE.md, "How close to the hardware"), checked against
figures published outside this repository."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.kit.catalog import write_v3_catalog
from tests.kit.entries import make_entry

from benchlab.cli import main
from benchlab.errors import QueryError
from benchlab.layout import Store
from benchlab.machines.roofline import (
    Shape,
    active_fraction,
    bytes_per_token,
    ceiling,
    impossible,
    judge,
    mbu_pct,
    predict,
)
from benchlab.query.roofline import fleet_specs, predict_decode

LLAMA_7B_Q4_0 = 3_825_065_984
"""llama-bench's `model_size` for llama 7B Q4_0, as llama.cpp's Apple-silicon scoreboard
(discussion #4167) lists it: 3.56 GiB."""


def test_mbu_of_published_results() -> None:
    # llama.cpp's scoreboard: M2 Ultra (800 GB/s) decodes llama 7B Q4_0 at 94.27 t/s.
    per_token = bytes_per_token(LLAMA_7B_Q4_0)
    assert per_token is not None
    assert mbu_pct(94.27, per_token, 800) == pytest.approx(45.07, abs=0.01)
    # M1 (68.25 GB/s) at 14.15 t/s: 79% of its bandwidth, a small chip near its limit.
    assert mbu_pct(14.15, per_token, 68.25) == pytest.approx(79.3, abs=0.1)
    assert ceiling(800, per_token) == pytest.approx(209.1, abs=0.1)


def test_a_result_over_the_ceiling_is_impossible() -> None:
    per_token = bytes_per_token(LLAMA_7B_Q4_0)
    assert per_token is not None
    top = ceiling(100, per_token)  # 26.1 t/s
    assert not impossible(top * 1.09, per_token, 100)
    assert impossible(top * 1.11, per_token, 100)


def test_moe_models_count_their_active_experts() -> None:
    assert active_fraction("qwen3moe 30B.A3B Q4_K - Medium") == pytest.approx(0.1)
    assert active_fraction("Mixtral 8x7B Q4_0") == pytest.approx(0.25)
    assert active_fraction("llama 7B Q4_0") == 1.0
    assert active_fraction(None) == 1.0


def test_the_kv_cache_counts_only_where_the_shape_is_known() -> None:
    shape = Shape(layers=32, kv_heads=8, head_dim=128, kv_bytes_per_value=2)
    assert bytes_per_token(1000, depth=4096) == 1000
    # K and V, 32 layers, 8 heads of 128, f16, 4,096 tokens: 512 MiB per token read.
    assert bytes_per_token(1000, shape=shape, depth=4096) == 1000 + 2 * 32 * 8 * 128 * 2 * 4096
    assert bytes_per_token(None) is None and bytes_per_token(0) is None


def test_judge_an_entry() -> None:
    entry = {"run_id": "r1", "decode_tok_per_sec": 94.27, "model_size": LLAMA_7B_Q4_0}
    found = judge(entry, 800, "spec")
    assert found is not None and not found.impossible
    assert found.mbu_pct == pytest.approx(45.07, abs=0.01)
    assert judge({"run_id": "r2", "decode_tok_per_sec": 9.0}, 800, "spec") is None
    assert judge({**entry, "decode_tok_per_sec": 300.0}, 800, "spec").impossible  # type: ignore[union-attr]


def test_prediction_scales_the_ceiling_by_the_fleets_median_mbu() -> None:
    found = predict(200.0, [40.0, 50.0, 60.0, 500.0])  # 500%: an impossible run, left out
    assert found is not None and found.machines == 3
    assert found.tok_per_sec == pytest.approx(100.0)
    assert (found.low, found.high) == (pytest.approx(80.0), pytest.approx(120.0))
    assert predict(200.0, [50.0]) is None


SIZE = 4_000_000_000


@pytest.fixture
def fleet(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> list[dict[str, Any]]:
    """The store ($BENCHLAB_STORE) of four machines that ran one 4 GB model (bandwidths 100,
    200, 400 GB/s and one the physics check must catch), declared as `bench machines set`
    declares them; the entries."""
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    entries = [
        make_entry(f"{m}-r1", m, "2026-12-01T00:00:00Z", model="llama 7B Q4_0",
                   model_id="llama-7b", model_size=SIZE, decode_tok_per_sec=decode)
        for m, decode in (("slow", 12.5), ("mid", 30.0), ("fast", 70.0), ("fake", 90.0))
    ]  # fmt: skip
    write_v3_catalog(store, entries)
    for machine, gbs in (("slow", 100), ("mid", 200), ("fast", 400), ("fake", 100), ("new", 800)):
        assert main(["machines", "set", machine, "--mem-bandwidth", str(gbs)]) == 0
    capsys.readouterr()
    return entries


def test_validate_reports_a_run_faster_than_physics(
    fleet: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["catalog", "validate"]) == 1
    err = capsys.readouterr().err
    # fake: 100 GB/s / 4 GB = 25 t/s ceiling; 60 t/s claimed.
    assert "error: impossible: fake-r1: decode 90.0 t/s, over 1.1 x its ceiling 25.0 t/s" in err
    assert "impossible: slow-r1" not in err and "catalog: 1 runs decode faster" in err


def test_predict_from_the_fleets_median_mbu(store: Path, fleet: list[dict[str, Any]]) -> None:
    entries = fleet
    specs = fleet_specs(Store(store))
    # MBU: slow 50%, mid 60%, fast 70%; fake is impossible and left out. new: 200 t/s ceiling.
    found, per_token = predict_decode(entries, specs, "new", "llama-7b")
    assert per_token == SIZE and found.machines == 3
    assert found.tok_per_sec == pytest.approx(120.0)
    assert (found.low, found.high) == (pytest.approx(100.0), pytest.approx(140.0))
    with pytest.raises(QueryError, match="no specs for this machine"):
        predict_decode(entries, specs, "nowhere", "llama-7b")


def test_best_predict(fleet: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["best", "--predict", "new", "--model", "llama-7b", "--format", "json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["decode_tok_per_sec"] == 120.0 and answer["machines"] == 3
    assert main(["best", "--predict", "new"]) == 2
    assert "--predict needs --model" in capsys.readouterr().err


def test_best_never_ranks_an_impossible_series_and_shows_mbu(
    fleet: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["best", "--model", "llama-7b", "--metric", "decode_tok_per_sec"]) == 0
    out, err = capsys.readouterr()
    assert "fast" in out and "fake" not in out and "MBU %" in out
    assert "note: 1 series set aside" in err
    assert (
        main(["best", "--by", "machine", "--metric", "decode_tok_per_sec", "--format", "json"]) == 0
    )
    rows = json.loads(capsys.readouterr().out)
    assert {row["machine_id"] for row in rows} == {"slow", "mid", "fast"}
    assert {row["machine_id"]: row["mbu_pct"] for row in rows} == {
        "slow": 50.0,
        "mid": 60.0,
        "fast": 70.0,
    }


def test_the_roofline_chart_draws_each_machine_under_its_ceiling(
    store: Path, fleet: list[dict[str, Any]]
) -> None:
    from benchlab.publish.charts.roofline import roofline_chart

    entries = fleet
    unknown = make_entry("far-r1", "far", "2026-12-01T00:00:00Z", model_size=SIZE,
                         decode_tok_per_sec=5.0)  # fmt: skip
    chart = roofline_chart([*entries, unknown], fleet_specs(Store(store)))
    machines = [t["name"] for t in chart.figure["data"] if t.get("mode") == "markers"]
    assert machines == ["fake", "fast", "mid", "slow"]
    by_machine = {row["machine"]: row for row in chart.rows}
    assert by_machine["fast"]["ceiling_tok_per_sec"] == 100.0
    assert by_machine["fast"]["mbu_pct"] == 70.0
    assert "1 series left out" in chart.note
    assert roofline_chart(entries, {}).empty


def test_the_reference_decoders_bytes_are_its_own_count() -> None:
    from benchlab.machines.roofline import entry_bytes_per_token, reference_weight_bytes

    # As a real reference run here recorded them (kernel.json, weight_bytes_per_token).
    assert reference_weight_bytes("smollm2-135m", "f32") == 537_919_488
    assert reference_weight_bytes("smollm2-135m", "q8") == 135_298_560
    assert reference_weight_bytes("tiny", "f32") == 4_194_304
    assert reference_weight_bytes("no-such-model", "f32") is None
    run = {"backend": "reference", "model_id": "smollm2-135m", "precision": "q8",
           "prompt_tokens": 32, "gen_tokens": 16, "decode_tok_per_sec": 20.0}  # fmt: skip
    kv = 2 * 30 * 3 * 64 * 4 * 40  # f32 K and V at the mean context, 32 + 16 / 2
    assert entry_bytes_per_token(run) == 135_298_560 + kv
    # 4 MiB of weights can live in a last-level cache: no DRAM roofline, no MBU, never
    # impossible (its matvec pass streams them at 47 GB/s here, 3x what memory copies).
    tiny = {**run, "model_id": "tiny", "precision": "f32", "decode_tok_per_sec": 2900.0}
    assert entry_bytes_per_token(tiny) is None
    assert judge({**tiny, "run_id": "t"}, 5.0, "measured") is None


def test_best_judges_mbu_at_the_level_it_shows(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`best` shows a series' current level, so MBU is of that level, not of the newest run:
    four runs near 40 t/s then one at 32 read the level's MBU, not the newest run's 64%."""
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    entries = [
        make_entry(f"box-r{i}", "box", f"2026-12-0{i + 1}T00:00:00Z", model="llama 7B Q4_0",
                   model_id="llama-7b", model_size=SIZE, decode_tok_per_sec=decode)
        for i, decode in enumerate((40.0, 40.2, 39.8, 40.1, 32.0))
    ]  # fmt: skip
    write_v3_catalog(store, entries)
    assert main(["machines", "set", "box", "--mem-bandwidth", "200"]) == 0
    capsys.readouterr()
    args = ["best", "--model", "llama-7b", "--metric", "decode_tok_per_sec", "--format", "json"]
    assert main(args) == 0
    [row] = json.loads(capsys.readouterr().out)
    level = row["decode_tok_per_sec"]
    assert level != 32.0
    assert row["mbu_pct"] == pytest.approx(round(100 * level * SIZE / 200e9, 1))
