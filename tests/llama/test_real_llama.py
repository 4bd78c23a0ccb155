"""Real llama.cpp end to end: a llama-bench built from PyPI's sdist, random-weight GGUFs.

These tests run the real binary, not a fake: they prove the build recipe, the model writer
and the `llama-bench` backend agree with what llama.cpp actually prints. Cold, the build
takes a few minutes (once per machine, cached); warm, the module takes seconds.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from llama_tools import CACHE, build_tool, models_tool, portable_args, tool

from benchlab.cli import main

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROW_FIELDS = ("build_commit", "build_number", "n_threads", "avg_ts", "stddev_ts")


def bench_rows(binary: Path, model: Path, *args: str) -> list[dict[str, Any]]:
    """llama-bench's JSON rows for `model` with the settings that run on any CPU
    (`portable_args`); the command's stderr on failure."""
    argv = [str(binary), "-m", str(model), "-o", "json", *portable_args(binary), *args]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{argv}: {done.stderr[-2000:]}"
    rows = json.loads(done.stdout)
    assert isinstance(rows, list) and rows
    if portable_args(binary):  # the build took the setting: no CPU-specific repacking
        assert all(row.get("repack") is False for row in rows), [r.get("repack") for r in rows]
    return rows


def test_build_is_cached_static_and_keeps_the_scripts(llama_build: Any) -> None:
    assert llama_build.version == build_tool.DEFAULT_VERSION
    assert llama_build.commit == "0c1e570"
    assert llama_build.build_number == 20261001  # the commit date: see build.py
    assert llama_build.compare_script.is_file()
    started = time.monotonic()
    again = build_tool.ensure_build(build_tool.DEFAULT_VERSION, cache_dir=CACHE)
    assert not again.built_now and again.root == llama_build.root
    assert time.monotonic() - started < 1.0
    # Static: nothing of llama.cpp's own is loaded from elsewhere at run time.
    ldd = subprocess.run(["ldd", str(llama_build.llama_bench)], capture_output=True, text=True)
    assert "libllama" not in ldd.stdout and "libggml" not in ldd.stdout


def test_llama_bench_json_rows(llama_build: Any, tiny_model: Path) -> None:
    rows = bench_rows(llama_build.llama_bench, tiny_model, "-p", "64", "-n", "16", "-t", "1,2")
    assert len(rows) == 4  # (pp64, tg16) x (1, 2 threads)
    for row in rows:
        missing = [key for key in ROW_FIELDS if key not in row]
        assert not missing, f"row lacks {missing}: {sorted(row)}"
        assert row["build_commit"] == llama_build.commit
        assert row["build_number"] == llama_build.build_number
        assert row["avg_ts"] > 0 and row["stddev_ts"] >= 0
    assert sorted(row["n_threads"] for row in rows) == [1, 1, 2, 2]
    assert {(row["n_prompt"], row["n_gen"]) for row in rows} == {(64, 0), (0, 16)}


def test_models_are_deterministic_and_quantize(llama_build: Any, tmp_path: Path) -> None:
    shape = models_tool.MODELS["tiny"]
    first, second = tmp_path / "a.gguf", tmp_path / "b.gguf"
    models_tool.write_gguf(shape, "f32", first)
    models_tool.write_gguf(shape, "f32", second)
    assert first.read_bytes() == second.read_bytes()
    assert first.read_bytes() == models_tool.model_path("tiny", "f32", CACHE).read_bytes()
    cache = tmp_path / "cache"
    for precision in ("f16", "q8_0", "q4_0"):
        path = models_tool.ensure_model(
            "tiny", precision, cache_dir=cache, quantize_bin=llama_build.llama_quantize
        )
        (row,) = bench_rows(llama_build.llama_bench, path, "-p", "16", "-n", "0", "-r", "1")
        assert precision.upper() in row["model_type"], row["model_type"]
        assert row["model_n_params"] == shape.n_params


def test_bench_run_llama_sweep(
    llama_build: Any, tiny_model: Path, store: Path, tmp_path: Path, monkeypatch, capsys
) -> None:
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    run = tool("run")
    config = run.sweep_config(CACHE, build_tool.DEFAULT_VERSION, dest_dir=tmp_path)
    started = time.monotonic()
    assert main(["run", str(config)]) == 0
    elapsed = time.monotonic() - started
    out = capsys.readouterr().out
    assert "8 run(s) in " in out and ", 0 failed" in out, out
    # Under 30 s on 2 idle cores; llama.cpp's 2-thread points slow down 10-100x when other
    # work holds the cores (its threads spin at barriers), so only a hang fails here.
    assert elapsed < 300, f"the sweep took {elapsed:.0f} s"
    runs = sorted(p for p in (store / "runs" / "by-machine" / "local").iterdir() if p.is_dir())
    assert len(runs) == 8
    for run_dir in runs:
        record = json.loads((run_dir / "record.json").read_text())
        assert record["status"] == "ok", record
        kernel = json.loads((run_dir / "kernel.json").read_text())
        batch = json.loads((run_dir / "batch.json").read_text())
        bench = kernel["benchmark"]
        assert [p["tokens"] for p in bench["prefill"]] == [64]
        assert bench["prefill"][0]["tok_per_sec"] > 0
        assert bench["decode"]["decode_steps"] == 16 and bench["decode"]["tok_per_sec"] > 0
        assert {p["n_depth"] for p in bench["at_depth"]} == {64}
        assert f"({llama_build.commit})" in kernel["engine"]
        # One sequence measured: the curve is the tg rate at batch 1 and there is no peak
        # aggregate (ARCHITECTURE.md, Metrics), in batch.json or in the record's metrics.
        decode = bench["decode"]["tok_per_sec"]
        assert batch.get("peak") is None, batch
        assert [(p["batch"], p["agg_tok_per_sec"]) for p in batch["points"]] == [(1, decode)]
        assert batch["baseline"] == {"batch": 1, "tok_per_sec": decode}
        metrics = record["metrics"]
        assert metrics["decode_tok_per_sec"] == metrics["baseline_tok_per_sec"] == decode
        assert metrics["prefill_tok_per_sec"] == bench["prefill"][0]["tok_per_sec"]
        assert metrics.get("peak_tok_per_sec") is None and metrics.get("speedup") is None


def test_older_build_differs(llama_build: Any, tiny_model: Path) -> None:
    """Two versions, two llama.cpp commits. Building the older one is opt-in when it is not
    cached (BENCHLAB_LLAMA_BOTH=1), to keep a cold run of this module to one build."""
    older = build_tool.OLDER_VERSION
    cached = (CACHE / older / build_tool.MANIFEST).is_file()
    if not cached and os.environ.get("BENCHLAB_LLAMA_BOTH") != "1":
        pytest.skip(f"python tools/llama/build.py --version {older} (or BENCHLAB_LLAMA_BOTH=1)")
    other = build_tool.ensure_build(older, cache_dir=CACHE)
    (row,) = bench_rows(other.llama_bench, tiny_model, "-p", "0", "-n", "8", "-r", "1")
    assert row["build_commit"] == other.commit == "4227c9b"
    assert row["build_number"] == other.build_number == 20250814
    assert row["build_number"] != llama_build.build_number


def test_the_pinned_build_runs_quantized_models_without_repacking(llama_build: Any) -> None:
    """Tests pass `--repack 0` (portable_args): a pin moved to a build without the option
    must say so here, not leave the quantized tests on the CPU-specific path."""
    assert portable_args(llama_build.llama_bench) == ("--repack", "0")


def test_repack_is_a_sweep_param_of_the_backend(
    llama_build: Any, store: Path, tmp_path: Path, monkeypatch
) -> None:
    """`repack: 0` in a sweep's params reaches llama-bench (`--repack 0`), which reports
    it in its rows: what a crash's hint on an AMX CPU tells the user to try."""
    cache = tmp_path / "cache"
    q8 = models_tool.ensure_model(
        "tiny", "q8_0", cache_dir=cache, quantize_bin=llama_build.llama_quantize
    )
    point = {"binary": str(llama_build.llama_bench), "model_path": str(q8), "reps": 1}
    config = tmp_path / "repack.yaml"
    config.write_text(
        json.dumps(
            {
                "experiment": "repack",
                "devices": {"local": {"transport": "local"}},
                "matrix": {
                    "backend": "llama-bench",
                    "model": "tiny",
                    "precision": "q8_0",
                    "threads": 1,
                    "prompt_tokens": 16,
                    "gen_tokens": 4,
                    "params": {**point, "repack": 0},
                },
            }
        )
    )
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    assert main(["run", str(config)]) == 0
    (run_dir,) = [p for p in (store / "runs" / "by-machine" / "local").iterdir() if p.is_dir()]
    assert json.loads((run_dir / "record.json").read_text())["status"] == "ok"
    argv = json.loads((run_dir / "raw" / "task.json").read_text())["argv"]
    assert argv[argv.index("--repack") + 1] == "0"
    rows = json.loads((run_dir / "raw" / "stdout.txt").read_text())
    assert {row["repack"] for row in rows} == {False}
