"""The `reference` backend: the numpy transformer decode of `benchlab.agent.reference_bench`.

The task runs `{python} {agent} reference ...` on the device, so it needs nothing but numpy
for the agent's interpreter (checked through `exists`). The parser maps the benchmark's JSON
onto kernel.json and batch.json (ARCHITECTURE.md, The run files) and reports how close decode gets
to the device's own matvec bandwidth bound (`bandwidth_bound_fraction`: the time one pass over the
weights takes in isolation divided by the measured per-token decode time; 1.0 means decode is purely
bandwidth bound, lower means overhead on top of streaming the weights).

spec.params (all optional): prefill_sizes (list, default [16, 64] plus prompt_tokens),
reps (3), batch_steps (8), batch_prompt_tokens (16), seed (0), timeout_s (1800).
"""

from __future__ import annotations

import json
from typing import Any

from benchlab import __version__
from benchlab.agent.reference_bench import MODELS, PRECISIONS
from benchlab.benchmarks.base import Backend, ParsedRun
from benchlab.benchmarks.common import (
    batch_curve,
    check_finished,
    finite_metrics,
    param,
    require,
    thread_env,
)
from benchlab.devices.base import Transport
from benchlab.errors import ConfigError, ParseError
from benchlab.models import AgentEnvelope, AgentTask, BatchResults, KernelResults, RunSpec

PRECISION_LABEL = {"f32": "F32", "q8": "Q8 (int8 x f32 scales)"}


def _positive_ints(value: Any, what: str) -> list[int]:
    values = value if isinstance(value, list) else [value]
    if not values or not all(
        isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in values
    ):
        raise ConfigError(f"{what}: expected positive integers, got {value!r}")
    return sorted(set(values))


class ReferenceBackend(Backend):
    name = "reference"

    def check_available(self, device: Transport, spec: RunSpec) -> None:
        require(device, "module", "numpy", self.name)

    def build_task(self, spec: RunSpec, run_id: str) -> AgentTask:
        where = f"{spec.spec_id}: reference"
        if spec.model not in MODELS:
            known = ", ".join(sorted(MODELS))
            raise ConfigError(f"{where}: model {spec.model!r}: unknown; expected one of {known}")
        if spec.precision not in PRECISIONS:
            raise ConfigError(
                f"{where}: precision {spec.precision!r}: expected one of {', '.join(PRECISIONS)}"
            )

        def one(value: Any, what: str) -> int:
            return _positive_ints(value, f"{where}: {what}")[0]

        prompt = one(spec.prompt_tokens or 16, "prompt_tokens")
        prefill = _positive_ints(param(spec, "prefill_sizes", [16, 64]), f"{where}: prefill_sizes")
        batches = _positive_ints(spec.batch_sizes or [1, 2, 4, 8], f"{where}: batch_sizes")
        batch_prompt = one(param(spec, "batch_prompt_tokens", 16), "params.batch_prompt_tokens")
        seed = param(spec, "seed", 0)
        timeout = param(spec, "timeout_s", 1800.0)
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise ConfigError(f"{where}: params.seed: expected an integer, got {seed!r}")
        if not isinstance(timeout, (int, float)) or timeout <= 0:
            raise ConfigError(f"{where}: params.timeout_s: expected seconds > 0, got {timeout!r}")
        argv = [
            "{python}",
            "{agent}",
            "reference",
            f"--model={spec.model}",
            f"--precision={spec.precision}",
            f"--prompt-tokens={prompt}",
            f"--decode-steps={one(spec.gen_tokens or 16, 'gen_tokens')}",
            f"--reps={one(param(spec, 'reps', 3), 'params.reps')}",
            f"--prefill-sizes={','.join(map(str, sorted({*prefill, prompt})))}",
            f"--batch-sizes={','.join(map(str, batches))}",
            f"--batch-steps={one(param(spec, 'batch_steps', 8), 'params.batch_steps')}",
            f"--batch-prompt-tokens={batch_prompt}",
            f"--seed={seed}",
        ]
        if spec.threads is not None:
            argv.append(f"--threads={one(spec.threads, 'threads')}")
        return AgentTask(argv=argv, env=thread_env(spec.threads), timeout_s=float(timeout))

    def parse(self, envelope: AgentEnvelope, spec: RunSpec, run_id: str) -> ParsedRun:
        where = f"{run_id}: reference"
        check_finished(envelope, spec, run_id, self.name)
        try:
            data = json.loads(envelope.stdout)
        except ValueError as exc:
            raise ParseError(
                f"{where}: stdout is not JSON ({exc}); it starts {envelope.stdout[:80]!r}"
            ) from exc
        if not isinstance(data, dict):
            raise ParseError(f"{where}: stdout is JSON but not an object: {envelope.stdout[:80]!r}")
        try:
            return self._map(data, spec, run_id)
        except (KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
            raise ParseError(
                f"{where}: output lacks or mangles a field ({type(exc).__name__}: {exc})"
            ) from exc

    def _map(self, data: dict[str, Any], spec: RunSpec, run_id: str) -> ParsedRun:
        where = f"{run_id}: reference"
        precision = str(data["precision"])
        threads = f"t{spec.threads}" if spec.threads else "all threads"
        label = PRECISION_LABEL.get(precision, precision)
        model_name = str(data.get("display") or data["model"])
        matvec = data["matvec"]
        f32, q8 = matvec["f32"], matvec["q8"]
        decode = data["decode"]
        prefill = [
            {
                "tokens": int(p["tokens"]),
                "median_ms": float(p["median_ms"]),
                "tok_per_sec": float(p["tok_per_sec"]),
                "reps": p.get("reps"),
                "stddev_ts": p.get("stddev_ts"),
            }
            for p in data["prefill"]
        ]
        if not prefill:
            raise ParseError(f"{where}: no prefill points in the output")
        fraction = float(decode["bandwidth_bound_fraction"])
        kernel = KernelResults.model_validate(
            {
                "$schema": KernelResults.SCHEMA_ID,
                "run_id": run_id,
                "engine": f"benchlab reference numpy {label} ({threads})",
                "precision": spec.precision,
                "model": model_name,
                "benchmark": {
                    "prefill": prefill,
                    "decode": {
                        "prompt_tokens": int(decode["prompt_tokens"]),
                        "decode_steps": int(decode["decode_steps"]),
                        "reps": int(decode["reps"]),
                        "per_token_median_ms": float(decode["per_token_median_ms"]),
                        "tok_per_sec": float(decode["tok_per_sec"]),
                        "stddev_ts": decode.get("stddev_ts"),
                        "effective_gbs": decode.get("effective_gbs"),
                        "weight_bytes_per_token": decode.get("weight_bytes_per_token"),
                        "bandwidth_bound_ms": decode.get("bandwidth_bound_ms"),
                        "bandwidth_bound_fraction": fraction,
                    },
                },
                "kernel_breakdown": {
                    "f32_ms": float(f32["ms"]),
                    "f32_gbs": float(f32["gbs"]),
                    "int8xf32_ms": float(q8["ms"]),
                    "int8xf32_gbs": float(q8["gbs"]),
                    "int8xf32_xf32": float(q8["ms"]) / float(f32["ms"]),
                    "scope": "one matvec over every weight matrix of the model (decode's bytes)",
                    "f32_bytes": f32.get("bytes"),
                    "int8xf32_bytes": q8.get("bytes"),
                    "bandwidth_bound_fraction": fraction,
                },
                "parameters": data.get("parameters"),
                "numpy": data.get("numpy"),
            }
        )
        curve = batch_curve(
            [
                {
                    "batch": int(p["batch"]),
                    "agg_tok_per_sec": float(p["agg_tok_per_sec"]),
                    "per_user_ms_per_tok": float(p["per_user_ms_per_tok"]),
                }
                for p in data["batch"]["points"]
            ]
        )
        if not curve["points"]:
            raise ParseError(f"{where}: no batched decode points in the output")
        batch = BatchResults.model_validate(
            {
                "$schema": BatchResults.SCHEMA_ID,
                "run_id": run_id,
                "engine": f"benchlab reference numpy batched decode {label} ({threads})",
                "model": model_name,
                "precision": spec.precision,
                "workers": spec.threads,
                **curve,
            }
        )
        metrics = finite_metrics(
            {
                "f32_gbs": float(f32["gbs"]),
                "int8xf32_gbs": float(q8["gbs"]),
                "bandwidth_bound_fraction": fraction,
            },
            where,
        )
        facts = {"backend_version": f"benchlab {__version__}"}
        if isinstance(data.get("parameters"), int):
            facts["model_params"] = data["parameters"]
        return ParsedRun(kernel=kernel, batch=batch, metrics=metrics, facts=facts)
