"""How close a run is to what its machine can do at all (ARCHITECTURE.md, "How close to the
hardware").

Each generated token reads the model's active weights (and the KV cache so far) once, so
decode t/s x bytes per token can never exceed the memory bandwidth. From that one bound:

- the **ceiling**: bandwidth / bytes per token, the fastest decode the machine allows;
- **MBU** (model bandwidth utilisation): achieved decode / ceiling, in percent;
- the **physics check**: a decode over 1.1 x its ceiling is `impossible` (a mistake or a
  fake); the 10% allows for a spec-sheet figure that undersells a card and for a model file
  whose metadata is not read on every token;
- the **prediction** for a machine that never ran a model: its ceiling x the fleet's median
  MBU for that model, with the interval the fleet's spread of MBU gives.

Bytes per token are a lower bound wherever the model's shape is unknown (llama-bench's JSON
gives the file size, not the layer count): the KV cache read is then left out, which raises
the ceiling, so the physics check never calls a run impossible for want of a shape.
The reference decoder's bytes per token come from its own shapes (its weights and f32 KV
cache), since its runs carry no file size. A model under 64 MiB a token is not judged at all:
its weights can stay in a large last-level cache, which memory bandwidth does not bound.
A mixture-of-experts model reads only its active experts per token: a name that says
`30B.A3B` counts 3/30 of the weights, `8x7B` two experts of eight (Mixtral's top-2); both
leave out the shared attention weights, again a lower bound.

Prefill is the compute twin (`machines.compute` holds the peak FLOP/s): each prompt token
costs 2 FLOPs per active parameter (a multiply and an add), plus, where the shape is known
(the reference decoder), the attention's 4 x layers x heads x head_dim FLOPs per token of
context it attends to (QK^T and AV), at the prompt's mean causal context. MFU (model FLOPs
utilisation) is prefill t/s x FLOPs per token over the peak, in percent; a prefill over
1.1 x the peak's ceiling is `impossible` as a decode is. The 2 x parameters count the
embedding table too (a lookup, not a product), which over-counts by the embedding's share
(about 4% for llama 7B, 14% for Qwen2 7B with its 152k vocabulary); the unknown attention
term under-counts. Unlike bytes, no cache can serve FLOPs: a small model reads a low MFU,
never an impossible one, so every size is judged.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from benchlab.agent.reference_bench import MODELS, parameter_count
from benchlab.metrics import DECODE, PREFILL

IMPOSSIBLE_OVER = 1.1
"""A decode this many times over its ceiling cannot have happened."""

_ACTIVE = re.compile(r"(\d+(?:\.\d+)?)B[.\-_ ]?A(\d+(?:\.\d+)?)B", re.IGNORECASE)
_EXPERTS = re.compile(r"\b(\d+)x(\d+(?:\.\d+)?)B\b", re.IGNORECASE)


def active_fraction(model: str | None) -> float:
    """The share of the weights one token reads: 1.0 for a dense model."""
    if not model:
        return 1.0
    active = _ACTIVE.search(model)
    if active:
        total, used = float(active.group(1)), float(active.group(2))
        return min(1.0, used / total) if total > 0 else 1.0
    experts = _EXPERTS.search(model)
    if experts and int(experts.group(1)) > 2:
        return 2.0 / int(experts.group(1))
    return 1.0


@dataclass(frozen=True)
class Shape:
    """What the KV cache read needs; known for the reference decoder, not for an import."""

    layers: int
    kv_heads: int
    head_dim: int
    kv_bytes_per_value: float = 2.0


def bytes_per_token(
    model_size: int | None, *, model: str | None = None, shape: Shape | None = None,
    depth: int = 0,
) -> float | None:  # fmt: skip
    """Bytes one decoded token reads: active weights plus K and V of every layer at `depth`
    (only where the shape is known). None without a model size."""
    if not model_size or model_size <= 0:
        return None
    weights = model_size * active_fraction(model)
    kv = 0.0
    if shape is not None and depth > 0:
        kv = 2 * shape.layers * shape.kv_heads * shape.head_dim * shape.kv_bytes_per_value * depth
    return weights + kv


CACHE_RESIDENT_BYTES = 64 << 20
"""Below this many bytes per token the weights can stay in a large last-level cache (the
membw probe's own floor for a working set that leaves the cache): memory bandwidth does not
bound such a decode, so it gets no MBU and is never called impossible."""


def reference_shape(model_id: str | None) -> tuple[dict[str, Any], Shape] | None:
    """The reference decoder's shape for a model it builds (`agent.reference_bench.MODELS`)."""
    shape = MODELS.get(str(model_id))
    if shape is None:
        return None
    head_dim = shape["hidden"] // shape["heads"]
    kv = Shape(layers=shape["layers"], kv_heads=shape["kv_heads"], head_dim=head_dim,
               kv_bytes_per_value=4.0)  # fmt: skip
    return shape, kv


def reference_weight_bytes(model_id: str | None, precision: str | None) -> int | None:
    """Bytes of weights one reference decode step reads, as its matvec pass counts them:
    every linear of every layer and the tied LM head, f32 (4 bytes a weight) or q8 (1 byte a
    weight and one f32 scale per output row). None for a model or precision it lacks."""
    found = reference_shape(model_id)
    if found is None or precision not in ("f32", "q8"):
        return None
    shape: dict[str, int] = found[0]
    hidden, ffn, head_dim = shape["hidden"], shape["ffn"], shape["hidden"] // shape["heads"]
    q_out, kv_out = shape["heads"] * head_dim, shape["kv_heads"] * head_dim
    # (out, in) of each linear: q, k, v, o, gate, up, down.
    layer = [(q_out, hidden), (kv_out, hidden), (kv_out, hidden), (hidden, q_out),
             (ffn, hidden), (ffn, hidden), (hidden, ffn)]  # fmt: skip
    linears = layer * shape["layers"] + [(shape["vocab"], hidden)]
    if precision == "f32":
        return sum(4 * out * inp for out, inp in linears)
    return sum(out * inp + 4 * out for out, inp in linears)


def entry_bytes_per_token(entry: Mapping[str, Any]) -> float | None:
    """A catalog entry's bytes per decoded token: its `model_size` (llama-bench's, a GGUF
    file's), else the reference decoder's own weights with its f32 KV cache at the decode's
    mean context (prompt + half the generated tokens). None where neither is known or the
    weights could live in cache (`CACHE_RESIDENT_BYTES`)."""
    model_size = entry.get("model_size")
    shape = None
    depth = entry.get("depth") or 0
    if not model_size and entry.get("backend") == "reference":
        model_size = reference_weight_bytes(entry.get("model_id"), entry.get("precision"))
        found = reference_shape(entry.get("model_id"))
        shape = found[1] if found else None
        depth = (entry.get("prompt_tokens") or 0) + (entry.get("gen_tokens") or 0) // 2
    per_token = bytes_per_token(model_size, model=entry.get("model"), shape=shape, depth=depth)
    if per_token is None or per_token < CACHE_RESIDENT_BYTES:
        return None
    return per_token


def ceiling(bandwidth_gbs: float, per_token: float) -> float:
    """The fastest decode (t/s) the bandwidth allows."""
    return bandwidth_gbs * 1e9 / per_token


def mbu_pct(decode_rate: float, per_token: float, bandwidth_gbs: float) -> float:
    """Model bandwidth utilisation: the share of the bandwidth the decode used, in percent."""
    return decode_rate * per_token / (bandwidth_gbs * 1e9) * 100.0


def impossible(decode_rate: float, per_token: float, bandwidth_gbs: float) -> bool:
    return decode_rate > IMPOSSIBLE_OVER * ceiling(bandwidth_gbs, per_token)


@dataclass(frozen=True)
class Judgement:
    """One run against its machine's roofline."""

    run_id: str
    bandwidth_gbs: float
    bandwidth_source: str
    ceiling_tok_per_sec: float
    mbu_pct: float
    impossible: bool


def judge(entry: Mapping[str, Any], bandwidth_gbs: float, source: str) -> Judgement | None:
    """A catalog entry's MBU and physics check, or None where it has no decode or no bytes
    per token (`entry_bytes_per_token`)."""
    decode = entry.get(DECODE.name)
    per_token = entry_bytes_per_token(entry)
    if not isinstance(decode, (int, float)) or decode <= 0 or per_token is None:
        return None
    return Judgement(
        run_id=str(entry.get("run_id")),
        bandwidth_gbs=bandwidth_gbs,
        bandwidth_source=source,
        ceiling_tok_per_sec=ceiling(bandwidth_gbs, per_token),
        mbu_pct=mbu_pct(decode, per_token, bandwidth_gbs),
        impossible=impossible(decode, per_token, bandwidth_gbs),
    )


def flops_per_token(
    params: int | None, *, model: str | None = None, shape: Shape | None = None,
    heads: int = 0, context: float = 0.0,
) -> float | None:  # fmt: skip
    """FLOPs one prompt token costs: 2 x the active parameters, plus the attention's
    4 x layers x heads x head_dim x `context` where the shape is known. None without a
    parameter count."""
    if not params or params <= 0:
        return None
    dense = 2.0 * params * active_fraction(model)
    attention = 0.0
    if shape is not None and heads > 0 and context > 0:
        attention = 4.0 * shape.layers * heads * shape.head_dim * context
    return dense + attention


def entry_flops_per_token(entry: Mapping[str, Any]) -> float | None:
    """A catalog entry's FLOPs per prompt token: from its `model_params` (llama-bench's
    `model_n_params`), else the reference decoder's count of the model it builds, with the
    attention term where the shape is known (the reference decoder, at the prompt's mean
    causal context past its depth). None without a parameter count."""
    params = entry.get("model_params")
    found = reference_shape(entry.get("model_id")) if entry.get("backend") == "reference" else None
    if not params and found is not None:
        params = parameter_count(found[0])
    if not isinstance(params, int) or isinstance(params, bool) or params <= 0:
        return None
    shape, heads, context = None, 0, 0.0
    if found is not None:
        shape, heads = found[1], int(found[0]["heads"])
        prompt = entry.get("prompt_tokens") or 0
        context = (entry.get("depth") or 0) + (prompt + 1) / 2 if prompt else 0.0
    return flops_per_token(params, model=entry.get("model"), shape=shape, heads=heads,
                           context=context)  # fmt: skip


def prefill_ceiling(peak_tflops: float, per_token: float) -> float:
    """The fastest prefill (t/s) the peak compute allows."""
    return peak_tflops * 1e12 / per_token


def mfu_pct(prefill_rate: float, per_token: float, peak_tflops: float) -> float:
    """Model FLOPs utilisation: the share of the peak compute the prefill used, in percent."""
    return prefill_rate * per_token / (peak_tflops * 1e12) * 100.0


@dataclass(frozen=True)
class PrefillJudgement:
    """One run's prefill against its machine's peak compute."""

    run_id: str
    peak_tflops: float
    peak_source: str
    ceiling_tok_per_sec: float
    mfu_pct: float
    impossible: bool


def judge_prefill(
    entry: Mapping[str, Any], peak_tflops: float, source: str
) -> PrefillJudgement | None:
    """A catalog entry's MFU and physics check, or None where it has no prefill or no FLOPs
    per token (`entry_flops_per_token`)."""
    prefill = entry.get(PREFILL.name)
    per_token = entry_flops_per_token(entry)
    if not isinstance(prefill, (int, float)) or prefill <= 0 or per_token is None:
        return None
    top = prefill_ceiling(peak_tflops, per_token)
    return PrefillJudgement(
        run_id=str(entry.get("run_id")),
        peak_tflops=peak_tflops,
        peak_source=source,
        ceiling_tok_per_sec=top,
        mfu_pct=mfu_pct(prefill, per_token, peak_tflops),
        impossible=prefill > IMPOSSIBLE_OVER * top,
    )


@dataclass(frozen=True)
class Prediction:
    """Decode t/s expected on a machine from its ceiling and the fleet's MBU for the model."""

    tok_per_sec: float
    low: float
    high: float
    ceiling_tok_per_sec: float
    median_mbu_pct: float
    machines: int
    """How many machines' MBU the median and interval come from."""


def predict(ceiling_tok_per_sec: float, fleet_mbu: Iterable[float]) -> Prediction | None:
    """The ceiling scaled by the fleet's median MBU (one figure per machine), with the
    interval from the fleet's lowest to highest MBU: with a handful of machines a quantile
    interval would claim more than the fleet knows. None without at least two machines."""
    shares = sorted(m for m in fleet_mbu if 0 < m <= 100 * IMPOSSIBLE_OVER)
    if len(shares) < 2:
        return None
    median = statistics.median(shares)
    return Prediction(
        tok_per_sec=ceiling_tok_per_sec * median / 100,
        low=ceiling_tok_per_sec * shares[0] / 100,
        high=ceiling_tok_per_sec * shares[-1] / 100,
        ceiling_tok_per_sec=ceiling_tok_per_sec,
        median_mbu_pct=median,
        machines=len(shares),
    )
