"""The llama-bench parser on real llama-bench outputs (tests/data/llama_bench/, see README)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from benchlab.benchmarks import get_backend
from benchlab.devices.local import LocalTransport
from benchlab.errors import ConfigError, MeasurementError, ParseError
from benchlab.models import AgentEnvelope, DeviceConfig

from .conftest import derived

DATA = Path(__file__).resolve().parents[1] / "data" / "llama_bench"

# file -> (pp tokens, pp avg_ts, pp median ms from samples_ns, tg steps, tg avg_ts, model, engine)
REAL = {
    "b1275-cuda-2023-09.json": (
        512,
        2410.974041,
        212.328053,
        128,
        130.965708,
        "llama 7B mostly Q4_0",
        "b1275 (3469684) CUDA",
    ),
    "b1275-cuda-2023-09.jsonl": (
        512,
        2410.974041,
        212.328053,
        128,
        130.965708,
        "llama 7B mostly Q4_0",
        "b1275 (3469684) CUDA",
    ),
    "b5163-cuda-2025-04.json": (
        512,
        7100.002165,
        71.7452,
        128,
        118.881588,
        "qwen2 7B Q4_K - Medium",
        "b5163 (8cf427ff) CUDA",
    ),
    "b11371-vulkan-2026-10.json": (
        512,
        13462.443199,
        37.89208,
        128,
        370.659695,
        "qwen2 1B Q4_K - Medium",
        "(99b9548) Vulkan",
    ),
}


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_outputs_map_onto_kernel_and_batch(name, spec_factory, envelope_factory):
    tokens, pp_ts, pp_ms, steps, tg_ts, model, engine = REAL[name]
    spec = spec_factory(
        "llama-bench", model="qwen", precision="q4", prompt_tokens=512, gen_tokens=128
    )
    parsed = get_backend("llama-bench").parse(
        envelope_factory((DATA / name).read_text()), spec, "rid"
    )
    kernel = parsed.kernel.model_dump(by_alias=True)
    assert kernel["run_id"] == "rid" and kernel["$schema"] == "benchmark/kernel-results.v1"
    assert kernel["model"] == model and engine in kernel["engine"]
    [point] = kernel["benchmark"]["prefill"]
    assert point["tokens"] == tokens
    assert point["tok_per_sec"] == pytest.approx(pp_ts)
    assert point["median_ms"] == pytest.approx(pp_ms)
    assert point["reps"] == 5 and point["stddev_ts"] > 0
    decode = kernel["benchmark"]["decode"]
    assert decode["decode_steps"] == steps and decode["tok_per_sec"] == pytest.approx(tg_ts)
    assert decode["per_token_median_ms"] == pytest.approx(1e3 / tg_ts, rel=0.02)
    batch = parsed.batch.model_dump(by_alias=True)
    assert [p["batch"] for p in batch["points"]] == [1]
    assert batch["baseline"]["tok_per_sec"] == pytest.approx(tg_ts)
    assert derived(parsed, spec)["prefill_tok_per_sec"] == pytest.approx(pp_ts)
    assert derived(parsed, spec)["decode_tok_per_sec"] == pytest.approx(tg_ts)


def test_single_repetition_cpu_row_without_array(spec_factory, envelope_factory):
    spec = spec_factory("llama-bench", prompt_tokens=64)
    parsed = get_backend("llama-bench").parse(
        envelope_factory((DATA / "cpu-one-rep-row.json").read_text()), spec, "rid"
    )
    [point] = parsed.kernel.benchmark.prefill
    assert (point.tokens, point.tok_per_sec) == (64, pytest.approx(12410.551917))
    assert point.median_ms == pytest.approx(5.156902)
    assert parsed.kernel.benchmark.decode is None
    assert parsed.batch.points == []
    assert "decode_tok_per_sec" not in derived(parsed, spec)


def test_rate_falls_back_to_samples_then_avg_ns(spec_factory, envelope_factory):
    rows = json.loads((DATA / "b5163-cuda-2025-04.json").read_text())
    for row in rows:
        del row["avg_ts"]
    rows[1].pop("samples_ts")
    rows[1].pop("samples_ns")
    spec = spec_factory("llama-bench", prompt_tokens=512, gen_tokens=128)
    parsed = get_backend("llama-bench").parse(envelope_factory(json.dumps(rows)), spec, "rid")
    assert derived(parsed, spec)["prefill_tok_per_sec"] == pytest.approx(7099.96, rel=1e-4)
    assert derived(parsed, spec)["decode_tok_per_sec"] == pytest.approx(128 / 1.07676788)


def test_banner_lines_before_the_array_and_combined_tests(spec_factory, envelope_factory):
    rows = json.loads((DATA / "b1275-cuda-2023-09.json").read_text())
    combined = dict(rows[1], n_prompt=512, n_gen=128, avg_ts=600.22)
    text = "ggml_vulkan: Found 1 Vulkan devices:\n" + json.dumps([*rows, combined])
    parsed = get_backend("llama-bench").parse(
        envelope_factory(text), spec_factory("llama-bench"), "r"
    )
    assert parsed.kernel.benchmark.model_dump()["combined"][0]["tok_per_sec"] == 600.22


def test_unusable_outputs(spec_factory, envelope_factory):
    backend, spec = get_backend("llama-bench"), spec_factory("llama-bench")
    failed = (DATA / "failed-load-stdout.txt").read_text()
    with pytest.raises(MeasurementError, match="exited 1"):
        backend.parse(
            envelope_factory(failed, exit_code=1, stderr="error: failed to load model"), spec, "r"
        )
    with pytest.raises(ParseError, match="not llama-bench JSON"):
        backend.parse(envelope_factory(failed), spec, "r")
    markdown = (
        "| model | size | test | t/s |\n| --- | --- | --- | --- |\n| llama | 1 | pp512 | 5 ± 1 |\n"
    )
    with pytest.raises(ParseError, match="run with -o json"):
        backend.parse(envelope_factory(markdown), spec, "r")
    with pytest.raises(ParseError, match="no test objects"):
        backend.parse(envelope_factory("[]"), spec, "r")
    with pytest.raises(ParseError, match="no prompt"):
        backend.parse(envelope_factory('[{"n_prompt": 0, "n_gen": 0, "avg_ts": 1}]'), spec, "r")
    with pytest.raises(ParseError, match=r"test 0: no rate"):
        backend.parse(envelope_factory('[{"n_prompt": 512, "n_gen": 0}]'), spec, "r")


def test_build_task_passes_the_spec_parameters(spec_factory):
    spec = spec_factory(
        "llama-bench",
        threads=4,
        prompt_tokens=128,
        gen_tokens=64,
        params={"model_path": "/models/m.gguf", "batch": 256, "ubatch": 128, "reps": 3},
    )
    task = get_backend("llama-bench").build_task(spec, "r")
    assert task.argv == [
        "llama-bench", "-m", "/models/m.gguf", "-o", "json", "-p", "128", "-n", "64", "-t", "4",
        "-r", "3", "-b", "256", "-ub", "128",
    ]  # fmt: skip
    with pytest.raises(ConfigError, match="model_path: required"):
        get_backend("llama-bench").build_task(spec_factory("llama-bench"), "r")
    bad = spec_factory("llama-bench", params={"model_path": "m", "batch": "big"})
    with pytest.raises(ConfigError, match=r"params\.batch"):
        get_backend("llama-bench").build_task(bad, "r")


def test_missing_binary_is_a_config_error(spec_factory):
    spec = spec_factory(
        "llama-bench", params={"binary": "llama-bench-not-installed", "model_path": "m"}
    )
    with pytest.raises(ConfigError, match=r"device 'here'.*llama-bench-not-installed"):
        get_backend("llama-bench").check_available(LocalTransport("here", DeviceConfig()), spec)


def test_end_to_end_with_a_stand_in_binary(tmp_path: Path, spec_factory):
    """A stand-in llama-bench on the device's PATH prints a real recorded output."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "llama-bench"
    tool.write_text(f"#!/bin/sh\ncat '{DATA / 'b5163-cuda-2025-04.json'}'\n")
    tool.chmod(0o755)
    device = LocalTransport("here", DeviceConfig(env={"PATH": f"{bin_dir}:{os.environ['PATH']}"}))
    spec = spec_factory(
        "llama-bench", prompt_tokens=512, gen_tokens=128, params={"model_path": "m"}
    )
    backend = get_backend("llama-bench")
    backend.check_available(device, spec)
    task = backend.build_task(spec, "r")
    envelope = AgentEnvelope.model_validate(device.call("run", task.model_dump(), timeout=60))
    assert derived(backend.parse(envelope, spec, "r"), spec)["decode_tok_per_sec"] == pytest.approx(
        118.881588
    )
