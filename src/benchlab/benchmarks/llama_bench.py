"""The `llama-bench` backend: llama.cpp's own benchmark, `llama-bench -o json`.

The device needs the `llama-bench` binary on PATH (or `params.binary`) and a GGUF model
(`params.model_path`). The parser reads every schema llama-bench has printed since JSON
output appeared (2023: `cuda`/`metal`/`f16_kv` flags; 2025: `backends`, `n_depth`, integer
`flash_attn`; later: `load_mode`, `repack` ...): it relies only on `n_prompt`, `n_gen` and
the rate, taking `avg_ts` when present, else the samples (`samples_ts`, `samples_ns`), else
`avg_ns`. It also accepts JSON lines (`-o jsonl`) and banner lines printed before the array.

Mapping onto the run files (ARCHITECTURE.md, The run files): prompt tests (n_prompt > 0, n_gen = 0)
are kernel.json prefill points, a generation test (n_gen > 0, n_prompt = 0) is the decode result,
pp+tg tests are kept as `combined`; llama-bench has no batched decode, so batch.json holds the one
batch-1 point the decode test measured and no peak: its peak aggregate is "not measured", never
the tg rate again (llama-batched-bench is not built by tools/llama/).

spec.params: model_path (required), binary ("llama-bench"), reps (-r), batch (-b),
ubatch (-ub), n_gpu_layers (-ngl), depth (-d), repack (--repack: 0 keeps the weights as the
file has them; builds since late 2025), type_k (-ctk), type_v (-ctv), flash_attn (-fa),
extra_args (list), timeout_s (3600).

What the rows say about the run (n_threads, n_batch, n_ubatch, n_gpu_layers, flash_attn,
type_k/type_v, build number and commit, model size and parameters, quant type) are reported
as identity facts: the number was measured under them, whatever the spec asked.
"""

from __future__ import annotations

import json
import signal
from typing import Any

from benchlab.benchmarks.base import Backend, ParsedRun
from benchlab.benchmarks.common import (
    batch_curve,
    check_finished,
    param,
    require,
    thread_env,
)
from benchlab.devices.base import Transport
from benchlab.errors import ConfigError, ParseError
from benchlab.identity import normalize_precision
from benchlab.metrics import chosen_prefill
from benchlab.models import AgentEnvelope, AgentTask, BatchResults, KernelResults, RunSpec
from benchlab.redact.shapes import public_kv_type, public_model_type

FLAGS = (
    ("reps", "-r"),
    ("batch", "-b"),
    ("ubatch", "-ub"),
    ("n_gpu_layers", "-ngl"),
    ("depth", "-d"),
    ("repack", "--repack"),
)
STRING_FLAGS = (("type_k", "-ctk"), ("type_v", "-ctv"))
FACT_FIELDS = (
    ("n_threads", "threads"),
    ("n_batch", "n_batch"),
    ("n_ubatch", "n_ubatch"),
    ("n_gpu_layers", "gpu_layers"),
    ("flash_attn", "flash_attn"),
    ("type_k", "type_k"),
    ("type_v", "type_v"),
    ("build_number", "backend_build"),
    ("build_commit", "backend_commit"),
    ("model_size", "model_size"),
    ("model_n_params", "model_params"),
)
"""llama-bench row fields -> identity facts."""


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2.0


def load_rows(text: str, where: str) -> list[dict[str, Any]]:
    """The test objects of llama-bench JSON or JSONL output; ParseError when there are none."""
    candidates = [text]
    start = text.find("\n[")
    if not text.lstrip().startswith("[") and start >= 0:
        candidates.append(text[start + 1 :])  # banner lines before the array
    for candidate in candidates:
        try:
            data = json.loads(candidate)
        except ValueError:
            continue
        rows = data if isinstance(data, list) else [data]
        if rows and all(isinstance(r, dict) for r in rows):
            return rows
        raise ParseError(f"{where}: JSON output holds no test objects: {candidate[:80]!r}")
    rows = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if isinstance(row, dict):
                rows.append(row)
    if rows:
        return rows
    hint = " (markdown table: run with -o json)" if "| t/s" in text or "t/s |" in text else ""
    raise ParseError(f"{where}: stdout is not llama-bench JSON{hint}; it starts {text[:80]!r}")


def _int(row: dict[str, Any], key: str) -> int:
    value = row.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ParseError(f"field {key!r} is not a number: {value!r}")
    return int(value)


def rate(row: dict[str, Any], tokens: int) -> tuple[float, float | None, float, int | None]:
    """(tok/s, stddev tok/s, median ms per test, reps) from whatever the row carries."""
    samples_ts = [float(v) for v in row.get("samples_ts") or [] if isinstance(v, (int, float))]
    samples_ns = [float(v) for v in row.get("samples_ns") or [] if isinstance(v, (int, float))]
    reps = len(samples_ns or samples_ts) or None
    tps = row.get("avg_ts")
    if not isinstance(tps, (int, float)) or isinstance(tps, bool):
        if samples_ts:
            tps = sum(samples_ts) / len(samples_ts)
        elif samples_ns:
            tps = tokens / (sum(samples_ns) / len(samples_ns) / 1e9)
        elif isinstance(row.get("avg_ns"), (int, float)) and row["avg_ns"] > 0:
            tps = tokens / (row["avg_ns"] / 1e9)
        else:
            raise ParseError("no rate: none of avg_ts, samples_ts, samples_ns, avg_ns")
    if tps <= 0:
        raise ParseError(f"rate is not positive: {tps!r}")
    if samples_ns:
        median_ms = _median(samples_ns) / 1e6
    elif samples_ts:
        median_ms = tokens / _median(samples_ts) * 1e3
    else:
        median_ms = tokens / float(tps) * 1e3
    stddev = row.get("stddev_ts")
    stddev = float(stddev) if isinstance(stddev, (int, float)) else None
    return float(tps), stddev, median_ms, reps


class LlamaBenchBackend(Backend):
    name = "llama-bench"

    @staticmethod
    def binary(spec: RunSpec) -> str:
        return str(param(spec, "binary", "llama-bench"))

    def check_available(self, device: Transport, spec: RunSpec) -> None:
        require(device, "binary", self.binary(spec), self.name)

    def build_task(self, spec: RunSpec, run_id: str) -> AgentTask:
        where = f"{spec.spec_id}: llama-bench"
        model_path = spec.params.get("model_path")
        if not isinstance(model_path, str) or not model_path:
            raise ConfigError(f"{where}: params.model_path: required (the GGUF file on the device)")
        argv = [self.binary(spec), "-m", model_path, "-o", "json"]
        for value, flag in (
            (spec.prompt_tokens, "-p"),
            (spec.gen_tokens, "-n"),
            (spec.threads, "-t"),
        ):
            if value is not None:
                argv += [flag, str(value)]
        for key, flag in FLAGS:
            value = spec.params.get(key)
            if value is not None:
                if isinstance(value, bool) or not isinstance(value, int):
                    raise ConfigError(f"{where}: params.{key}: expected an integer, got {value!r}")
                argv += [flag, str(value)]
        for key, flag in STRING_FLAGS:
            value = spec.params.get(key)
            if value is not None:
                if not isinstance(value, str) or not value.isidentifier():
                    raise ConfigError(f"{where}: params.{key}: expected a type name like f16")
                argv += [flag, value]
        if spec.params.get("flash_attn") is not None:
            argv += ["-fa", str(int(bool(spec.params["flash_attn"])))]
        extra = spec.params.get("extra_args") or []
        if not isinstance(extra, list) or not all(isinstance(a, str) for a in extra):
            raise ConfigError(f"{where}: params.extra_args: expected a list of strings")
        timeout = param(spec, "timeout_s", 3600.0)
        if not isinstance(timeout, (int, float)) or timeout <= 0:
            raise ConfigError(f"{where}: params.timeout_s: expected seconds > 0, got {timeout!r}")
        return AgentTask(argv=argv + extra, env=thread_env(spec.threads), timeout_s=float(timeout))

    def crash_hint(
        self, spec: RunSpec, sig: signal.Signals, cpu_flags: frozenset[str] | None
    ) -> str | None:
        """llama.cpp repacks quantized weights for the CPU's fastest kernels by default, and
        builds of the repacking and AMX kernels have crashed on AMX CPUs (Sapphire Rapids
        and later) where `--repack 0` runs the same model."""
        if sig not in (signal.SIGSEGV, signal.SIGBUS, signal.SIGILL):
            return None
        if spec.params.get("repack") in (0, False):
            return None
        if cpu_flags is not None and "amx_tile" not in cpu_flags:
            return None
        which = (
            "and this one has AMX (amx_tile in /proc/cpuinfo)"
            if cpu_flags
            else "(amx_tile in the device's /proc/cpuinfo)"
        )
        return (
            f"llama-bench's weight repacking crashes some builds on AMX CPUs {which}: "
            "try `repack: 0` in the sweep's params, a llama-bench axis like any other"
        )

    def parse(self, envelope: AgentEnvelope, spec: RunSpec, run_id: str) -> ParsedRun:
        check_finished(envelope, spec, run_id, self.name)
        where = f"{run_id}: llama-bench"
        return results_from_rows(
            load_rows(envelope.stdout, where),
            run_id,
            precision=spec.precision,
            model=spec.model,
            prompt_tokens=spec.prompt_tokens,
            gen_tokens=spec.gen_tokens,
            depth=spec.params.get("depth"),
            where=where,
        )


def results_from_rows(
    rows: list[dict[str, Any]],
    run_id: str,
    *,
    precision: str,
    model: str,
    prompt_tokens: int | None = None,
    gen_tokens: int | None = None,
    depth: int | None = None,
    where: str = "llama-bench",
) -> ParsedRun:
    """One configuration's test rows as kernel.json and batch.json, plus metrics.

    Live runs and imported files (`bench migrate`) share this mapping, so a number means
    the same thing whichever way it arrived.
    """
    prefill: list[dict[str, Any]] = []
    decodes: list[dict[str, Any]] = []
    combined: list[dict[str, Any]] = []
    at_depth: list[dict[str, Any]] = []
    for index, row in enumerate(rows):
        try:
            n_prompt, n_gen = _int(row, "n_prompt"), _int(row, "n_gen")
            tps, stddev, median_ms, reps = rate(row, n_prompt + n_gen)
        except ParseError as exc:
            raise ParseError(f"{where}: test {index}: {exc}") from exc
        common = {"stddev_ts": stddev, "reps": reps, "n_depth": row.get("n_depth")}
        common.update({k: row[k] for k in ("n_threads", "n_batch", "n_ubatch") if k in row})
        if (row.get("n_depth") or 0) != (depth or 0):
            # At another prefilled context depth: a different measurement, kept beside.
            at_depth.append({"n_prompt": n_prompt, "n_gen": n_gen, "tok_per_sec": tps, **common})
        elif n_prompt > 0 and n_gen == 0:
            prefill.append(
                {"tokens": n_prompt, "median_ms": median_ms, "tok_per_sec": tps, **common}
            )
        elif n_gen > 0 and n_prompt == 0:
            decodes.append(
                {
                    "decode_steps": n_gen,
                    "per_token_median_ms": median_ms / n_gen,
                    "tok_per_sec": tps,
                    **common,
                }
            )
        elif n_prompt > 0 and n_gen > 0:
            combined.append({"n_prompt": n_prompt, "n_gen": n_gen, "tok_per_sec": tps, **common})
    if not prefill and not decodes:
        raise ParseError(f"{where}: no prompt (pp) or generation (tg) test in {len(rows)} row(s)")
    prefill.sort(key=lambda p: p["tokens"])
    decode = next((d for d in decodes if d["decode_steps"] == gen_tokens), None)
    decode = decode or (decodes[0] if decodes else None)
    first = rows[0]
    build = first.get("build_number")
    commit = first.get("build_commit")
    backend = first.get("backends") or ("CUDA" if first.get("cuda") else None)
    engine = "llama.cpp llama-bench"
    engine += f" b{build}" if build is not None else ""
    engine += f" ({commit})" if commit else ""
    engine += f" {backend}" if backend else ""
    model_name = public_model_type(first.get("model_type")) or model
    kernel = KernelResults.model_validate(
        {
            "$schema": KernelResults.SCHEMA_ID,
            "run_id": run_id,
            "engine": engine,
            "precision": precision,
            "model": model_name,
            "benchmark": {
                "prefill": prefill,
                "decode": decode,
                "combined": combined or None,
                "at_depth": at_depth or None,
            },
            "model_size": first.get("model_size"),
            "model_n_params": first.get("model_n_params"),
        }
    )
    points = []
    if decode is not None:
        ms = 1e3 / decode["tok_per_sec"]
        points.append(
            {"batch": 1, "agg_tok_per_sec": decode["tok_per_sec"], "per_user_ms_per_tok": ms}
        )
    curve = batch_curve(points)
    curve["peak"] = None  # one sequence measured: no peak aggregate (ARCHITECTURE.md, Metrics)
    batch = BatchResults.model_validate(
        {
            "$schema": BatchResults.SCHEMA_ID,
            "run_id": run_id,
            "engine": engine,
            "model": model_name,
            "precision": precision,
            "workers": first.get("n_threads"),
            **curve,
            "note": "llama-bench measures one sequence; the curve is its batch-1 point and "
            "there is no peak aggregate",
        }
    )
    facts = row_facts(first)
    chosen = chosen_prefill(kernel, prompt_tokens)  # the point the headline prefill is
    facts.update(
        prompt_tokens=chosen.tokens if chosen is not None else None,
        gen_tokens=decode["decode_steps"] if decode else None,
        depth=depth or None,
    )
    return ParsedRun(kernel=kernel, batch=batch, facts=facts)


def row_facts(row: dict[str, Any]) -> dict[str, Any]:
    """The identity facts one llama-bench row states about the run that produced it."""
    facts: dict[str, Any] = {
        name: row[key] for key, name in FACT_FIELDS if row.get(key) not in (None, "")
    }
    build, commit = facts.get("backend_build"), facts.get("backend_commit")
    if build is not None or commit:
        version = f"b{build}" if build is not None else ""
        facts["backend_version"] = f"{version} ({commit})".strip() if commit else version
    for name in ("type_k", "type_v"):  # published: only a tensor type's shape
        if name in facts and public_kv_type(str(facts[name])) is None:
            del facts[name]
    model_type = public_model_type(row.get("model_type"))
    if model_type:
        facts["precision"] = normalize_precision(model_type)
    return facts
