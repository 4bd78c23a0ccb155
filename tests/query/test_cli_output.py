"""Each verb's exact output, pyperf style: text for table and markdown, parsed json and csv."""

from __future__ import annotations

import csv
import io
import json
import textwrap
from pathlib import Path

import pytest
from tests.kit.cli import run_cli

from benchlab.catalog.read import ENTRY_FIELDS

from .conftest import LAPTOP_Q8, MAC_Q8


def dedent(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def test_list_table(golden: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "list", "--machine", "PI5")
    assert (code, err) == (0, "")
    assert out == dedent(
        """
        timestamp             run id                                               machine  model         precision  threads  shape    attempt  status  peak tok/s
        --------------------  ---------------------------------------------------  -------  ------------  ---------  -------  -------  -------  ------  ----------
        2025-01-07T15:00:00Z  pi5-smollm2-135m-q8-batch-a1b2c3d4-20250107T150000Z  pi5      SmolLM2-135M  q8               4  p32/n16  3/3      failed           -
        2025-01-08T08:00:00Z  pi5-smollm2-135m-q4-batch-0badcafe-20250108T080000Z  pi5      SmolLM2-135M  q4               -  p32/n16  1/3      ok           95.50
        """  # noqa: E501
    )


def test_list_markdown(golden: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "list", "--model", "qwen3-1.7b", "--format", "markdown")
    assert code == 0
    assert out == dedent(
        """
        | timestamp | run id | machine | model | precision | threads | shape | attempt | status | peak tok/s |
        |---|---|---|---|---|---:|---|---|---|---:|
        | 2025-01-08T20:00:00Z | mac-m3pro-qwen3-1.7b-bf16-batch-12345678-20250108T200000Z | mac-m3pro | Qwen3-1.7B | bf16 | 4 | p32/n16 | 1/3 | ok | 300.00 |
        | 2025-01-09T10:00:00Z | anthony-laptop-qwen3-1.7b-q8-batch-12345678-20250109T100000Z | anthony-laptop | Qwen3-1.7B | q8 | 4 | p32/n16 | 1/3 | ok | 410.00 |
        """  # noqa: E501
    )


def test_list_json_is_full_entries_in_order(
    golden: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(capsys, "list", "--model", "smollm2-135m", "--format", "json")
    rows = json.loads(out)
    assert code == 0
    assert [r["timestamp"][:10] for r in rows] == [
        "2025-01-05",
        "2025-01-06",
        "2025-01-07",
        "2025-01-07",
        "2025-01-08",
    ]
    # Every field is present, null where the catalog omits it: stable keys for scripts.
    assert rows[4]["model_id"] is None and rows[4]["prefill_tok_per_sec"] is None
    assert all(len(r) == len(ENTRY_FIELDS) for r in rows)
    assert out == json.dumps(rows, indent=2, sort_keys=True) + "\n"


def test_list_csv(golden: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "list", "--precision", "Q4", "--format", "csv")
    assert code == 0
    assert list(csv.reader(io.StringIO(out))) == [
        [
            "timestamp",
            "run_id",
            "machine_id",
            "model",
            "precision",
            "threads",
            "shape",
            "attempt",
            "status",
            "peak_tok_per_sec",
        ],
        [
            "2025-01-08T08:00:00Z",
            "pi5-smollm2-135m-q4-batch-0badcafe-20250108T080000Z",
            "pi5",
            "SmolLM2-135M",
            "q4",
            "",
            "p32/n16",
            "1/3",
            "ok",
            "95.5",
        ],
    ]


def test_list_empty_says_so_and_exits_1(golden: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(capsys, "list", "--model", "nosuch") == (
        1,
        "",
        "bench: no runs match --model nosuch "
        "(no model 'nosuch' in the catalog; known: qwen3-1.7b, smollm2-135m)\n",
    )
    code, out, _ = run_cli(capsys, "list", "--model", "nosuch", "--format", "json")
    assert (code, out) == (1, "[]\n")


def test_best_table(golden: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(
        capsys, "best", "--ever", "--model", "smollm2-135m", "--metric", "peak_tok_per_sec"
    )
    assert (code, err) == (0, "")
    assert out == dedent(
        """
        machine         model         precision  backend    threads  shape    version         peak_tok_per_sec  timestamp             run id
        --------------  ------------  ---------  ---------  -------  -------  --------------  ----------------  --------------------  --------------------------------------------------------------
        anthony-laptop  SmolLM2-135M  q8         reference        4  p32/n16  benchlab 0.1.0            862.20  2025-01-06T12:00:00Z  anthony-laptop-smollm2-135m-q8-batch-a1b2c3d4-20250106T120000Z
        shape: p512/n128 = 512 prompt tokens and 128 generated, d = context depth, b/ub = batch and micro-batch, fa = flash attention; threads: the CPU threads the run used.
        """  # noqa: E501
    )


def test_best_by_machine_markdown(golden: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(
        capsys,
        "best",
        "--ever",
        "--model",
        "SmolLM2-135M",
        "--by",
        "machine",
        "--format",
        "markdown",
    )
    assert code == 0
    assert out == dedent(
        """
        | machine | model | precision | backend | threads | shape | version | peak_tok_per_sec | timestamp | run id |
        |---|---|---|---|---:|---|---|---:|---|---|
        | anthony-laptop | SmolLM2-135M | q8 | reference | 4 | p32/n16 | benchlab 0.1.0 | 862.20 | 2025-01-06T12:00:00Z | anthony-laptop-smollm2-135m-q8-batch-a1b2c3d4-20250106T120000Z |
        | mac-m3pro | SmolLM2-135M | q8 | reference | 8 | p32/n16 | benchlab 0.1.0 | 640.50 | 2025-01-05T10:30:00Z | mac-m3pro-smollm2-135m-q8-batch-a1b2c3d4-20250105T103000Z |
        | pi5 | SmolLM2-135M | q4 | reference | - | p32/n16 | benchlab 0.1.0 | 95.50 | 2025-01-08T08:00:00Z | pi5-smollm2-135m-q4-batch-0badcafe-20250108T080000Z |

        shape: p512/n128 = 512 prompt tokens and 128 generated, d = context depth, b/ub = batch and micro-batch, fa = flash attention; threads: the CPU threads the run used.
        """  # noqa: E501
    )


def test_best_other_metric_json_and_csv(golden: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(
        capsys,
        "best",
        "--ever",
        "--model",
        "smollm2-135m",
        "--metric",
        "decode_tok_per_sec",
        "--format",
        "json",
    )
    assert code == 0
    assert [r["run_id"] for r in json.loads(out)] == [MAC_Q8]
    code, out, _ = run_cli(
        capsys, "best", "--ever", "--model", "smollm2-135m", "--metric", "speedup", "--format",
        "csv",
    )  # fmt: skip
    assert out.splitlines() == [
        "machine_id,model,precision,backend,threads,shape,version,speedup,timestamp,run_id",
        "anthony-laptop,SmolLM2-135M,q8,reference,4,p32/n16,benchlab 0.1.0,12.21,"
        f"2025-01-06T12:00:00Z,{LAPTOP_Q8}",
    ]


def test_best_without_a_model_answers_a_row_per_model(
    golden: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Models are not ranked against each other: with no --model, each model's best series;
    with one, the single best row as before."""
    for ever in ((), ("--ever",)):
        code, out, _ = run_cli(capsys, "best", *ever, "--format", "json")
        rows = json.loads(out)
        assert code == 0
        assert sorted(r["model"] for r in rows) == ["Qwen3-1.7B", "SmolLM2-135M"]
        code, out, _ = run_cli(capsys, "best", *ever, "--model", "qwen3-1.7b", "--format", "json")
        assert [r["model"] for r in json.loads(out)] == ["Qwen3-1.7B"]
    code, out, _ = run_cli(capsys, "best", "--by", "model", "--model", "qwen3-1.7b")
    assert code == 0 and out.count("Qwen3-1.7B") == 1 and "SmolLM2" not in out


def test_best_counts_only_ok_runs_unless_asked(
    golden: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The only pi5 q8 run failed and has no metrics: nothing to rank.
    code, out, err = run_cli(
        capsys, "best", "--model", "smollm2-135m", "--machine", "pi5", "--precision", "q8"
    )
    assert (code, out) == (1, "")
    assert err == (
        "bench: no runs match --model smollm2-135m --machine pi5 --precision q8 --status ok "
        "(with a peak_tok_per_sec)\n"
    )
    code, out, _ = run_cli(
        capsys, "best", "--machine", "pi5", "--status", "any", "--format", "json"
    )
    assert code == 0 and json.loads(out)[0]["precision"] == "q4"


def test_best_nothing_matches_exits_1_json_prints_empty(
    golden: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(capsys, "best", "--model", "nosuch", "--format", "json")
    assert (code, out) == (1, "[]\n")
    assert err.startswith("bench: no runs match --model nosuch")


def test_unknown_metric_is_one_line_listing_valid_ones(
    golden: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(capsys, "best", "--model", "smollm2-135m", "--metric", "tok_s")
    assert (code, out) == (2, "")
    assert err == (
        "bench: error: --metric: unknown metric 'tok_s'; valid: peak_tok_per_sec, "
        "baseline_tok_per_sec, speedup, prefill_tok_per_sec, decode_tok_per_sec, "
        "peak_rss_mb, gpu_mem_peak_mb, joules_per_token, decode_ms_per_token, "
        "ttft_ms, time_s, mem_bytes, track_value\n"
    )


def test_table_table_and_markdown(golden: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(
        capsys, "table", "--ever", "--model", "smollm2-135m", "--precision", "q8"
    )
    assert code == 0
    assert out == dedent(
        """
        machine         precision  backend    threads  shape    version         peak tok/s  baseline tok/s  speedup  prefill tok/s  decode tok/s         MBU %         MFU %  run id
        --------------  ---------  ---------  -------  -------  --------------  ----------  --------------  -------  -------------  ------------  ------------  ------------  --------------------------------------------------------------
        anthony-laptop  q8         reference        4  p32/n16  benchlab 0.1.0      862.20           70.60   12.21x        2245.60        128.20  not measured  not measured  anthony-laptop-smollm2-135m-q8-batch-a1b2c3d4-20250106T120000Z
        mac-m3pro       q8         reference        8  p32/n16  benchlab 0.1.0      640.50           80.10    8.00x        1800.00        150.30  not measured  not measured  mac-m3pro-smollm2-135m-q8-batch-a1b2c3d4-20250105T103000Z
        shape: p512/n128 = 512 prompt tokens and 128 generated, d = context depth, b/ub = batch and micro-batch, fa = flash attention; threads: the CPU threads the run used. MBU %: decode t/s x bytes per token over the machine's memory bandwidth (bench machines); not measured: the machine has no bandwidth figure; physics: impossible where decode beats that bandwidth by over 10%. MFU %: prefill t/s x 2 x parameters over the processor's peak FLOP/s (bench machines: a GPU's dense FP16 spec figure, a CPU's measured float32 GEMM rate); not measured: no peak figure for the processor it ran on; physics: also impossible where prefill beats that peak by over 10%.
        """  # noqa: E501
    )
    code, out, _ = run_cli(
        capsys, "table", "--ever", "--model", "smollm2-135m", "--precision", "q8", "--format",
        "markdown",
    )  # fmt: skip
    assert out == dedent(
        """
        | machine | precision | backend | threads | shape | version | peak tok/s | baseline tok/s | speedup | prefill tok/s | decode tok/s | MBU % | MFU % | run id |
        |---|---|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---|
        | anthony-laptop | q8 | reference | 4 | p32/n16 | benchlab 0.1.0 | 862.20 | 70.60 | 12.21x | 2245.60 | 128.20 | not measured | not measured | anthony-laptop-smollm2-135m-q8-batch-a1b2c3d4-20250106T120000Z |
        | mac-m3pro | q8 | reference | 8 | p32/n16 | benchlab 0.1.0 | 640.50 | 80.10 | 8.00x | 1800.00 | 150.30 | not measured | not measured | mac-m3pro-smollm2-135m-q8-batch-a1b2c3d4-20250105T103000Z |

        shape: p512/n128 = 512 prompt tokens and 128 generated, d = context depth, b/ub = batch and micro-batch, fa = flash attention; threads: the CPU threads the run used. MBU %: decode t/s x bytes per token over the machine's memory bandwidth (bench machines); not measured: the machine has no bandwidth figure; physics: impossible where decode beats that bandwidth by over 10%. MFU %: prefill t/s x 2 x parameters over the processor's peak FLOP/s (bench machines: a GPU's dense FP16 spec figure, a CPU's measured float32 GEMM rate); not measured: no peak figure for the processor it ran on; physics: also impossible where prefill beats that peak by over 10%.
        """  # noqa: E501
    )


def test_table_failed_runs_only_with_status(
    golden: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(
        capsys, "table", "--ever", "--model", "smollm2-135m", "--status", "failed", "--format",
        "csv",
    )  # fmt: skip
    assert code == 0
    row = "pi5,q8,reference,4,p32/n16,benchlab 0.1.0,,,,,,pi5-smollm2-135m-q8"
    assert out.splitlines()[1].startswith(row)
    code, out, err = run_cli(capsys, "table", "--model", "nosuch")
    assert (code, out) == (1, "")
    assert err == (
        "bench: no runs match --model nosuch --status ok "
        "(no model 'nosuch' in the catalog; known: qwen3-1.7b, smollm2-135m)\n"
    )


def test_summary_table_and_markdown(golden: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "summary", "--group-by", "machine")
    assert code == 0
    assert out == dedent(
        """
        machine         runs  ok  failed  median peak tok/s  max peak tok/s  last run
        --------------  ----  --  ------  -----------------  --------------  --------------------
        anthony-laptop     3   3       0             850.00          862.20  2025-01-09T10:00:00Z
        mac-m3pro          2   2       0             470.25          640.50  2025-01-08T20:00:00Z
        pi5                2   1       1              95.50           95.50  2025-01-08T08:00:00Z
        """
    )
    code, out, _ = run_cli(capsys, "summary", "--group-by", "model", "--format", "markdown")
    assert out == dedent(
        """
        | model | runs | ok | failed | median peak tok/s | max peak tok/s | last run |
        |---|---:|---:|---:|---:|---:|---|
        | qwen3-1.7b | 2 | 2 | 0 | 355.00 | 410.00 | 2025-01-09T10:00:00Z |
        | smollm2-135m | 5 | 4 | 1 | 745.25 | 862.20 | 2025-01-08T08:00:00Z |
        """
    )


def test_summary_by_precision_and_date_json_csv(
    golden: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(capsys, "summary", "--group-by", "precision", "--format", "json")
    assert code == 0
    assert [(r["precision"], r["count"], r["failed"]) for r in json.loads(out)] == [
        ("bf16", 1, 0),
        ("q4", 1, 0),
        ("q8", 5, 1),
    ]
    code, out, _ = run_cli(
        capsys,
        "summary",
        "--group-by",
        "date",
        "--since",
        "2025-01-07",
        "--until",
        "2025-01-07",
        "--format",
        "csv",
    )
    assert out == (
        "date,count,ok,failed,median_peak_tok_per_sec,max_peak_tok_per_sec,last_run\n"
        "2025-01-07,2,1,1,850.0,850.0,2025-01-07T15:00:00Z\n"
    )


def test_compare_table_shows_ratios_to_the_first(
    golden: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(capsys, "compare", "--run-id", LAPTOP_Q8, "--run-id", MAC_Q8)
    assert code == 0
    assert out == dedent(
        """
        runs
        run  run id                                                          machine         model         precision  threads  shape    version         status  timestamp
        ---  --------------------------------------------------------------  --------------  ------------  ---------  -------  -------  --------------  ------  --------------------
        A    anthony-laptop-smollm2-135m-q8-batch-a1b2c3d4-20250106T120000Z  anthony-laptop  SmolLM2-135M  q8               4  p32/n16  benchlab 0.1.0  ok      2025-01-06T12:00:00Z
        B    mac-m3pro-smollm2-135m-q8-batch-a1b2c3d4-20250105T103000Z       mac-m3pro       SmolLM2-135M  q8               8  p32/n16  benchlab 0.1.0  ok      2025-01-05T10:30:00Z

        metrics
        metric                           A             B    B/A
        --------------------  ------------  ------------  -----
        peak_tok_per_sec            862.20        640.50  0.74x
        baseline_tok_per_sec         70.60         80.10  1.13x
        speedup                      12.21          8.00  0.66x
        prefill_tok_per_sec        2245.60       1800.00  0.80x
        mfu_pct               not measured  not measured      -
        decode_tok_per_sec          128.20        150.30  1.17x
        mbu_pct               not measured  not measured      -
        """  # noqa: E501
    )


def test_compare_markdown_json_three_runs_and_missing_values(
    golden: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    failed = "pi5-smollm2-135m-q8-batch-a1b2c3d4-20250107T150000Z"
    argv = ["compare", "--run-id", MAC_Q8, "--run-id", LAPTOP_Q8, "--run-id", failed]
    code, out, _ = run_cli(capsys, *argv, "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert [r["run_id"] for r in data["runs"]] == [MAC_Q8, LAPTOP_Q8, failed]
    peak = data["metrics"][0]
    assert peak["metric"] == "peak_tok_per_sec"
    assert peak["values"] == [640.5, 862.2, None]
    assert peak["ratios"] == [1.0, pytest.approx(862.2 / 640.5), None]
    code, out, _ = run_cli(capsys, *argv, "--format", "markdown")
    assert "| metric | A | B | B/A | C | C/A |" in out
    assert "| peak_tok_per_sec | 640.50 | 862.20 | 1.35x | - | - |" in out
    assert out.startswith("### runs\n\n| run | run id |")


def test_compare_unknown_run_id_exits_1(golden: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # No such run is "no match" (exit 1), as every query verb; a bad request is 2.
    code, out, err = run_cli(capsys, "compare", "--run-id", LAPTOP_Q8, "--run-id", "nope")
    assert (code, out) == (1, "")
    assert err == f"bench: error: {golden / 'catalog.json'}: no run 'nope' in the catalog\n"
    code, _, err = run_cli(capsys, "compare", "--run-id", LAPTOP_Q8)
    assert code == 2
    assert err == (
        "bench: error: compare: give at least two --run-id, or --by build|revision|machine\n"
    )


def test_store_flag_points_at_the_store(
    golden: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BENCHLAB_STORE")
    code, out, _ = run_cli(capsys, "--store", str(golden), "best", "--ever", "--format", "csv")
    assert code == 0 and LAPTOP_Q8 in out
