"""The reference backend end to end on this machine (tiny model), and its failure paths."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from benchlab.agent.reference_bench import MODELS, build_model, parameter_count
from benchlab.benchmarks import get_backend
from benchlab.devices.local import LocalTransport
from benchlab.errors import ConfigError, DeviceError, MeasurementError, ParseError
from benchlab.metrics import derive
from benchlab.models import AgentEnvelope, BatchResults, DeviceConfig, KernelResults

from .conftest import derived


def run_point(device, spec, run_id="rid-1"):
    backend = get_backend("reference")
    backend.check_available(device, spec)
    task = backend.build_task(spec, run_id)
    answer = device.call("run", task.model_dump(), timeout=task.timeout_s + 30)
    return AgentEnvelope.model_validate(answer), backend.parse(
        AgentEnvelope.model_validate(answer), spec, run_id
    )


@pytest.mark.parametrize("precision", ["f32", "q8"])
def test_tiny_end_to_end(device, spec_factory, precision):
    spec = spec_factory(
        "reference",
        precision=precision,
        threads=1,
        prompt_tokens=16,
        gen_tokens=4,
        batch_sizes=[1, 4],
        params={"prefill_sizes": [8, 32], "reps": 2, "batch_steps": 3},
    )
    envelope, parsed = run_point(device, spec)
    assert envelope.exit_code == 0, envelope.stderr
    kernel = parsed.kernel.model_dump(by_alias=True)
    assert kernel["$schema"] == KernelResults.SCHEMA_ID and kernel["run_id"] == "rid-1"
    assert kernel["precision"] == precision
    assert [p["tokens"] for p in kernel["benchmark"]["prefill"]] == [8, 16, 32]
    decode = kernel["benchmark"]["decode"]
    assert decode["decode_steps"] == 4 and decode["reps"] == 2
    assert decode["tok_per_sec"] == pytest.approx(1e3 / decode["per_token_median_ms"])
    breakdown = kernel["kernel_breakdown"]
    assert breakdown["f32_gbs"] > 0 and breakdown["int8xf32_gbs"] > 0
    assert breakdown["int8xf32_xf32"] == pytest.approx(
        breakdown["int8xf32_ms"] / breakdown["f32_ms"]
    )
    assert 0 < breakdown["bandwidth_bound_fraction"] < 5
    batch = parsed.batch.model_dump(by_alias=True)
    assert batch["$schema"] == BatchResults.SCHEMA_ID and batch["run_id"] == "rid-1"
    assert [p["batch"] for p in batch["points"]] == [1, 4]
    assert batch["points"][0]["speedup_vs_baseline"] == pytest.approx(1.0)
    assert batch["baseline"]["batch"] == 1
    assert batch["peak"]["agg_tok_per_sec"] == max(p["agg_tok_per_sec"] for p in batch["points"])
    for key in ("prefill_tok_per_sec", "decode_tok_per_sec", "peak_tok_per_sec", "f32_gbs"):
        assert derived(parsed, spec)[key] > 0
    assert (
        derived(parsed, spec)["prefill_tok_per_sec"]
        == kernel["benchmark"]["prefill"][1]["tok_per_sec"]
    )
    assert (
        derived(parsed, spec)["bandwidth_bound_fraction"] == breakdown["bandwidth_bound_fraction"]
    )
    weights = json.loads(envelope.stdout)["matvec"][precision]["bytes"]
    per_param = 4 if precision == "f32" else 1
    assert weights >= per_param * (parameter_count(MODELS["tiny"]) - 20_000)


def test_task_pins_threads_and_uses_placeholders(spec_factory):
    task = get_backend("reference").build_task(spec_factory("reference", threads=3), "r")
    assert task.argv[:3] == ["{python}", "{agent}", "reference"]
    assert task.env["OMP_NUM_THREADS"] == "3" and task.env["OPENBLAS_NUM_THREADS"] == "3"
    assert "--threads=3" in task.argv
    assert get_backend("reference").build_task(spec_factory("reference"), "r").env == {}


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"model": "gpt-9"}, "model 'gpt-9': unknown"),
        ({"precision": "q4"}, "precision 'q4'"),
        ({"params": {"prefill_sizes": [0]}}, "prefill_sizes"),
        ({"params": {"reps": "many"}}, "params.reps"),
        ({"params": {"seed": 1.5}}, "params.seed"),
        ({"batch_sizes": [-1]}, "batch_sizes"),
    ],
)
def test_build_task_rejects_bad_specs(spec_factory, fields, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        get_backend("reference").build_task(spec_factory("reference", **fields), "r")


def test_missing_numpy_is_a_config_error_naming_the_device(tmp_path: Path, spec_factory):
    python = tmp_path / "python-no-site"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "$@"\n')
    python.chmod(0o755)
    device = LocalTransport("pi5", DeviceConfig(python=str(python)))
    with pytest.raises(ConfigError, match=r"device 'pi5'.*'numpy'"):
        get_backend("reference").check_available(device, spec_factory("reference"))


def test_unreachable_device_propagates_device_error(spec_factory):
    device = LocalTransport("ghost", DeviceConfig(python="/nonexistent/python3"))
    with pytest.raises(DeviceError):
        get_backend("reference").check_available(device, spec_factory("reference"))


def test_parse_garbage_and_missing_fields_are_parse_errors(spec_factory, envelope_factory):
    backend, spec = get_backend("reference"), spec_factory("reference")
    with pytest.raises(ParseError, match=r"rid: reference: stdout is not JSON.*'garbage"):
        backend.parse(envelope_factory("garbage\n"), spec, "rid")
    with pytest.raises(ParseError, match="not an object"):
        backend.parse(envelope_factory("[1, 2]"), spec, "rid")
    with pytest.raises(ParseError, match=r"lacks or mangles a field.*matvec"):
        backend.parse(envelope_factory('{"precision": "f32", "model": "tiny"}'), spec, "rid")


def test_parse_rejects_non_finite_numbers(device, spec_factory, envelope_factory):
    spec = spec_factory(
        "reference", gen_tokens=2, batch_sizes=[1], params={"reps": 1, "batch_steps": 1}
    )
    envelope, _ = run_point(device, spec)
    data = json.loads(envelope.stdout)
    data["decode"]["tok_per_sec"] = float("inf")
    with pytest.raises(ParseError, match=r"decode\.tok_per_sec\s+Input should be a finite"):
        get_backend("reference").parse(envelope_factory(json.dumps(data)), spec, "rid")


def test_the_one_derivation_refuses_non_finite_numbers_for_every_backend() -> None:
    kernel = {"benchmark": {"prefill": [], "decode": {"tok_per_sec": float("nan")}}}
    with pytest.raises(ParseError, match=r"decode_tok_per_sec.*not finite"):
        derive(kernel, {"points": []})


def test_failed_or_timed_out_runs_are_measurements(spec_factory, envelope_factory):
    backend, spec = get_backend("reference"), spec_factory("reference")
    with pytest.raises(MeasurementError, match=r"exited 1.*MemoryError"):
        backend.parse(envelope_factory("", exit_code=1, stderr="MemoryError\n"), spec, "rid")
    with pytest.raises(MeasurementError, match="timed out"):
        backend.parse(envelope_factory("", exit_code=-9, timed_out=True), spec, "rid")


def test_decode_with_kv_cache_matches_full_prefill():
    """The KV cache is real: prefill then one-token steps give the same logits as one prefill."""
    for precision in ("f32", "q8"):
        model = build_model("tiny", (precision,), seed=3)
        tokens = np.random.default_rng(0).integers(0, 2048, (2, 6))
        full = model.logits(tokens, model.new_cache(2, 8), 0)
        cache = model.new_cache(2, 8)
        model.logits(tokens[:, :4], cache, 0)
        model.logits(tokens[:, 4:5], cache, 4)
        step = model.logits(tokens[:, 5:6], cache, 5)
        np.testing.assert_allclose(step, full, rtol=2e-3, atol=2e-3)


def test_q8_tracks_f32():
    f32 = build_model("tiny", ("f32",), seed=1)
    q8 = build_model("tiny", ("q8",), seed=1)
    tokens = np.arange(8).reshape(1, 8)
    a = f32.logits(tokens, f32.new_cache(1, 8), 0)[0]
    b = q8.logits(tokens, q8.new_cache(1, 8), 0)[0]
    assert float(a @ b / np.linalg.norm(a) / np.linalg.norm(b)) > 0.99


def test_named_shapes():
    shape = MODELS["smollm2-135m"]
    assert (shape["hidden"], shape["layers"], shape["heads"], shape["kv_heads"]) == (576, 30, 9, 3)
    assert (shape["ffn"], shape["vocab"]) == (1536, 49152)
    assert 130e6 < parameter_count(shape) < 140e6
    assert parameter_count(MODELS["tiny"]) * 4 < 8e6


def test_unknown_backend_is_a_config_error():
    with pytest.raises(ConfigError, match="backend 'nope': unknown"):
        get_backend("nope")
    assert {get_backend(n).name for n in ("reference", "llama-bench", "command")} == {
        "reference",
        "llama-bench",
        "command",
    }
