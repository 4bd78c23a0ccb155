"""The reference benchmark: a real transformer decode in numpy, run on the device.

A Llama-style decoder (RMSNorm, RoPE, grouped-query attention with a KV cache, SwiGLU MLP,
tied LM head) with the shapes of a named model and random but seeded weights, in `f32` or
`q8` (int8 weights with per-row f32 scales, dequantised block by block inside the matvec,
the way a Q8 kernel without int8 SIMD does it). It measures:

- prefill at several prompt sizes (median ms, tok/s);
- decode, per-token median over reps (greedy, one token at a time, KV cache);
- one matvec pass over every weight matrix in f32 and in int8xf32 (the machine's own
  bandwidth bound for this model: GB/s of weights streamed, fastest of >= 5 passes);
- a batched decode curve (aggregate tok/s, per-user ms/token).

and prints one JSON object that `benchlab.benchmarks.reference` maps onto kernel.json and
batch.json. numpy is imported inside `main`, never at module level: the controller imports
MODELS from here without numpy, and the agent's other verbs never pay for it.

Usage (on the device; `{python} {agent} reference ...` in a task)::

    python agent.pyz reference --model tiny --precision q8 --prefill-sizes 16,64
"""

from __future__ import annotations

import argparse
import time
from typing import Any

MODELS: dict[str, dict[str, Any]] = {
    "tiny": {
        "display": "tiny",
        "hidden": 128,
        "layers": 4,
        "heads": 4,
        "kv_heads": 2,
        "ffn": 384,
        "vocab": 2048,
        "rope_theta": 10000.0,
    },
    "smollm2-135m": {
        "display": "SmolLM2-135M",
        "hidden": 576,
        "layers": 30,
        "heads": 9,
        "kv_heads": 3,
        "ffn": 1536,
        "vocab": 49152,
        "rope_theta": 100000.0,
    },
    "smollm2-360m": {
        "display": "SmolLM2-360M",
        "hidden": 960,
        "layers": 32,
        "heads": 15,
        "kv_heads": 5,
        "ffn": 2560,
        "vocab": 49152,
        "rope_theta": 100000.0,
    },
}
PRECISIONS = ("f32", "q8")
BLOCK_BYTES = 256 * 1024
"""Dequantise this much f32 at a time: the block stays in L2 while the matmul reads it."""


def parameter_count(shape: dict[str, Any]) -> int:
    hd = shape["hidden"] // shape["heads"]
    per_layer = (
        shape["hidden"] * (shape["heads"] + 2 * shape["kv_heads"]) * hd
        + shape["heads"] * hd * shape["hidden"]
        + 3 * shape["hidden"] * shape["ffn"]
        + 2 * shape["hidden"]
    )
    count: int = shape["layers"] * per_layer + shape["vocab"] * shape["hidden"] + shape["hidden"]
    return count


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2.0


def _stddev(values: list[float]) -> float | None:
    """The sample standard deviation of per-rep rates (as llama-bench's stddev_ts), so a
    run whose reps swing is seen as unstable; None with fewer than two reps."""
    if len(values) < 2:
        return None
    mean = sum(values) / len(values)
    root: float = (sum((v - mean) ** 2 for v in values) / (len(values) - 1)) ** 0.5
    return root


def _build(np: Any) -> dict[str, Any]:
    """The numpy-dependent classes, built once numpy is imported (kept out of module scope)."""
    linear = _linear_class(np)
    return {"Model": _model_class(np, linear), "Linear": linear}


def _linear_class(np: Any) -> Any:
    """The weight matrix type; a closure over numpy so the module imports without it."""

    class Linear:
        """y = x @ W.T, W (out, in) in f32, or int8 rows times per-row f32 scales."""

        def __init__(self, weight: Any, precision: str) -> None:
            self.precision = precision
            self.out_dim, self.in_dim = weight.shape
            if precision == "f32":
                self.w = np.ascontiguousarray(weight, dtype=np.float32)
                self.scale = None
                self.nbytes = self.w.nbytes
            else:
                scale = np.abs(weight).max(axis=1) / 127.0
                scale[scale == 0] = 1.0
                self.q = np.rint(weight / scale[:, None]).astype(np.int8)
                self.scale = scale.astype(np.float32)
                self.nbytes = self.q.nbytes + self.scale.nbytes
                self.rows = max(1, BLOCK_BYTES // (4 * self.in_dim))
                self.buf = np.empty((self.rows, self.in_dim), dtype=np.float32)

        def __call__(self, x: Any) -> Any:
            if self.scale is None:
                return x @ self.w.T
            y = np.empty((x.shape[0], self.out_dim), dtype=np.float32)
            for r0 in range(0, self.out_dim, self.rows):
                r1 = min(self.out_dim, r0 + self.rows)
                block = self.buf[: r1 - r0]
                np.copyto(block, self.q[r0:r1], casting="unsafe")
                y[:, r0:r1] = x @ block.T
            y *= self.scale
            return y

        def rows_of(self, ids: Any) -> Any:
            if self.scale is None:
                return self.w[ids]
            return self.q[ids].astype(np.float32) * self.scale[ids, None]

    return Linear


def _model_init(np: Any, linear: Any) -> Any:
    """`Model.__init__`: the seeded weights, in every precision asked for, drawn in one
    fixed order so a seed gives the same model everywhere."""

    def __init__(self: Any, shape: dict[str, Any], precisions: tuple[str, ...], seed: int) -> None:
        rng = np.random.default_rng(seed)
        self.shape = shape
        self.hidden = shape["hidden"]
        self.heads, self.kv = shape["heads"], shape["kv_heads"]
        self.hd = self.hidden // self.heads
        self.group = self.heads // self.kv

        def mat(rows: int, cols: int) -> Any:
            w = rng.standard_normal((rows, cols), dtype=np.float32)
            w *= np.float32(1.0 / np.sqrt(cols))
            return w

        # sets[precision] = list of per-layer dicts + "head"; norms are f32 in both.
        self.sets = {p: {"layers": []} for p in precisions}
        self.norms = []
        for _ in range(shape["layers"]):
            weights = {
                "qkv": mat((self.heads + 2 * self.kv) * self.hd, self.hidden),
                "o": mat(self.hidden, self.heads * self.hd),
                "gate_up": mat(2 * shape["ffn"], self.hidden),
                "down": mat(self.hidden, shape["ffn"]),
            }
            for p in precisions:
                self.sets[p]["layers"].append({k: linear(w, p) for k, w in weights.items()})
            self.norms.append(
                (
                    1.0 + 0.1 * rng.standard_normal(self.hidden, dtype=np.float32),
                    1.0 + 0.1 * rng.standard_normal(self.hidden, dtype=np.float32),
                )
            )
        embed = rng.standard_normal((shape["vocab"], self.hidden), dtype=np.float32)
        embed *= np.float32(0.02 * np.sqrt(self.hidden))
        for p in precisions:
            self.sets[p]["head"] = linear(embed, p)  # tied: the LM head is the embedding
        self.final_norm = np.ones(self.hidden, dtype=np.float32)
        half = self.hd // 2
        inv = 1.0 / (shape["rope_theta"] ** (np.arange(half, dtype=np.float64) / half))
        self.inv_freq = inv
        self.precision = precisions[0]

    return __init__


def _model_logits(np: Any) -> Any:
    """`Model.logits`: one forward pass through every layer, the KV cache filled in place."""

    def logits(self: Any, tokens: Any, cache: list[tuple[Any, Any]], start: int) -> Any:
        """tokens (B, T) at positions start..start+T-1 -> last-position logits (B, V)."""
        chosen = self.sets[self.precision]
        batch, steps = tokens.shape
        x = chosen["head"].rows_of(tokens.reshape(-1))  # (B*T, hidden)
        positions = np.arange(start, start + steps)
        end = start + steps
        scale = np.float32(1.0 / np.sqrt(self.hd))
        mask = None
        if steps > 1:
            causal = np.arange(end)[None, :] > positions[:, None]  # (T, L)
            mask = np.where(np.tile(causal, (self.group, 1)), -np.inf, 0.0).astype(np.float32)
        for layer, (ln1, ln2), (k_cache, v_cache) in zip(
            chosen["layers"], self.norms, cache, strict=True
        ):
            h = self._rmsnorm(x, ln1)
            qkv = layer["qkv"](h)
            nq, nk = self.heads * self.hd, self.kv * self.hd
            q = qkv[:, :nq].reshape(batch, steps, self.heads, self.hd)
            k = qkv[:, nq : nq + nk].reshape(batch, steps, self.kv, self.hd)
            v = qkv[:, nq + nk :].reshape(batch, steps, self.kv, self.hd)
            q = self._rope(q, positions)
            k = self._rope(k, positions)
            k_cache[:, :, start:end] = k.transpose(0, 2, 1, 3)
            v_cache[:, :, start:end] = v.transpose(0, 2, 1, 3)
            # (B, H, T, hd) -> (B, kv, group*T, hd): query heads share their kv head.
            qg = q.transpose(0, 2, 1, 3).reshape(batch, self.kv, self.group * steps, self.hd)
            scores = (qg @ k_cache[:, :, :end].transpose(0, 1, 3, 2)) * scale
            if mask is not None:
                scores += mask
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            attn = scores @ v_cache[:, :, :end]  # (B, kv, group*T, hd)
            attn = attn.reshape(batch, self.heads, steps, self.hd).transpose(0, 2, 1, 3)
            x = x + layer["o"](attn.reshape(batch * steps, self.heads * self.hd))
            h = self._rmsnorm(x, ln2)
            gate_up = layer["gate_up"](h)
            ffn = self.shape["ffn"]
            gate, up = gate_up[:, :ffn], gate_up[:, ffn:]
            x = x + layer["down"]((gate / (1.0 + np.exp(-gate))) * up)
        last = x.reshape(batch, steps, self.hidden)[:, -1]
        return chosen["head"](self._rmsnorm(last, self.final_norm))

    return logits


def _model_class(np: Any, linear: Any) -> Any:
    """The decoder; its two large methods are built by `_model_init` and `_model_logits`."""

    class Model:
        # Set by `_model_init` (mypy cannot see into a method built outside the class).
        shape: dict[str, Any]
        sets: dict[str, dict[str, Any]]
        kv: int
        hd: int
        inv_freq: Any
        precision: str

        __init__ = _model_init(np, linear)
        logits = _model_logits(np)

        def use(self, precision: str) -> None:
            self.precision = precision

        def drop(self, precision: str) -> None:
            del self.sets[precision]

        def linears(self, precision: str) -> list[Any]:
            chosen = self.sets[precision]
            out = [lin for layer in chosen["layers"] for lin in layer.values()]
            return [*out, chosen["head"]]

        def weight_bytes(self, precision: str) -> int:
            return sum(lin.nbytes for lin in self.linears(precision))

        def new_cache(self, batch: int, length: int) -> list[tuple[Any, Any]]:
            size = (batch, self.kv, length, self.hd)
            return [
                (np.zeros(size, dtype=np.float32), np.zeros(size, dtype=np.float32))
                for _ in range(self.shape["layers"])
            ]

        def _rope(self, x: Any, positions: Any) -> Any:
            angles = np.outer(positions, self.inv_freq).astype(np.float32)  # (T, half)
            cos = np.cos(angles)[None, :, None, :]
            sin = np.sin(angles)[None, :, None, :]
            half = self.hd // 2
            x1, x2 = x[..., :half], x[..., half:]
            return np.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)

        @staticmethod
        def _rmsnorm(x: Any, weight: Any) -> Any:
            return x * (1.0 / np.sqrt((x * x).mean(axis=-1, keepdims=True) + 1e-5)) * weight

        def forward(self, tokens: Any, cache: list[tuple[Any, Any]], start: int) -> Any:
            """tokens (B, T) at positions start..start+T-1 -> next token ids (B,) (greedy)."""
            return self.logits(tokens, cache, start).argmax(axis=-1)

    return Model


def build_model(model: str, precisions: tuple[str, ...], seed: int = 0) -> Any:
    """The numpy model (imports numpy): for tests and for `main`."""
    import numpy as np

    return _build(np)["Model"](MODELS[model], precisions, seed)


def _ints(text: str) -> list[int]:
    values = sorted({int(part) for part in text.split(",") if part.strip()})
    if not values or values[0] < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return values


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agent reference", add_help=False)
    parser.add_argument("--model", default="tiny", choices=sorted(MODELS))
    parser.add_argument("--precision", default="f32", choices=PRECISIONS)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--prompt-tokens", type=int, default=16)
    parser.add_argument("--decode-steps", type=int, default=16)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--prefill-sizes", type=_ints, default=[16, 64])
    parser.add_argument("--batch-sizes", type=_ints, default=[1, 2, 4, 8])
    parser.add_argument("--batch-steps", type=int, default=8)
    parser.add_argument("--batch-prompt-tokens", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    return parser


class UsageError(Exception):
    """Bad arguments for the reference benchmark."""


def _bandwidth_bound(
    np: Any, rng: Any, model: Any, precisions: tuple[str, ...], reps: int
) -> dict[str, Any]:
    """One matvec over every weight matrix, per precision: the machine's own bound."""
    breakdown: dict[str, Any] = {}
    for precision in precisions:
        linears = model.linears(precision)
        vectors = {
            lin.in_dim: rng.standard_normal((1, lin.in_dim), dtype=np.float32) for lin in linears
        }
        for lin in linears:  # warm-up pass (first touch, dequant buffers)
            lin(vectors[lin.in_dim])
        times = []
        for _ in range(max(5, reps)):
            t0 = time.perf_counter()
            for lin in linears:
                lin(vectors[lin.in_dim])
            times.append(time.perf_counter() - t0)
        # A bound is the best the machine did: the fastest pass, so a neighbour's burst of
        # load inflates the measured decode (reported as is) rather than the bound.
        seconds = min(times)
        nbytes = model.weight_bytes(precision)
        breakdown[precision] = {
            "ms": seconds * 1e3,
            "median_ms": _median(times) * 1e3,
            "gbs": nbytes / seconds / 1e9,
            "bytes": nbytes,
            "reps": len(times),
        }
    return breakdown


def _prefill(
    rng: Any, model: Any, args: argparse.Namespace, vocab: int
) -> tuple[Any, list[dict[str, Any]]]:
    """Prefill at several sizes; returns the cache too, sized for the decode that follows."""
    prefill = []
    longest = max([*args.prefill_sizes, args.prompt_tokens + args.decode_steps])
    cache = model.new_cache(1, longest)
    model.forward(rng.integers(0, vocab, (1, min(8, longest))), cache, 0)  # warm-up
    for size in args.prefill_sizes:
        tokens = rng.integers(0, vocab, (1, size))
        times = []
        for _ in range(args.reps):
            t0 = time.perf_counter()
            model.forward(tokens, cache, 0)
            times.append(time.perf_counter() - t0)
        seconds = _median(times)
        prefill.append(
            {
                "tokens": size,
                "median_ms": seconds * 1e3,
                "tok_per_sec": size / seconds,
                "reps": args.reps,
                "stddev_ts": _stddev([size / t for t in times]),
            }
        )
    return cache, prefill


def _decode(
    rng: Any,
    model: Any,
    cache: Any,
    args: argparse.Namespace,
    vocab: int,
    bound: dict[str, Any],
) -> dict[str, Any]:
    """Decode one token at a time after a prompt, per-token median over reps."""
    prompt = rng.integers(0, vocab, (1, args.prompt_tokens))
    step_times: list[float] = []
    rep_rates: list[float] = []
    for _ in range(args.reps):
        token = model.forward(prompt, cache, 0)
        rep_start = len(step_times)
        for step in range(args.decode_steps):
            t0 = time.perf_counter()
            token = model.forward(token.reshape(1, 1), cache, args.prompt_tokens + step)
            step_times.append(time.perf_counter() - t0)
        rep_seconds = sum(step_times[rep_start:])
        if rep_seconds > 0:
            rep_rates.append((len(step_times) - rep_start) / rep_seconds)
    per_token = _median(step_times)
    return {
        "prompt_tokens": args.prompt_tokens,
        "decode_steps": args.decode_steps,
        "reps": args.reps,
        "per_token_median_ms": per_token * 1e3,
        "per_token_min_ms": min(step_times) * 1e3,
        "tok_per_sec": 1.0 / per_token,
        "stddev_ts": _stddev(rep_rates),
        "weight_bytes_per_token": bound["bytes"],
        "effective_gbs": bound["bytes"] / per_token / 1e9,
        "bandwidth_bound_ms": bound["ms"],
        "bandwidth_bound_fraction": bound["ms"] / (per_token * 1e3),
    }


def _batched(
    rng: Any, model: Any, args: argparse.Namespace, vocab: int, batch_prompt: int
) -> list[dict[str, Any]]:
    """Batched decode: B users step together; every step gives each user one token."""
    points = []
    for batch in sorted({1, *args.batch_sizes}):
        cache = model.new_cache(batch, batch_prompt + args.batch_steps)
        tokens = model.forward(rng.integers(0, vocab, (batch, batch_prompt)), cache, 0)
        times = []
        for step in range(args.batch_steps):
            t0 = time.perf_counter()
            tokens = model.forward(tokens.reshape(batch, 1), cache, batch_prompt + step)
            times.append(time.perf_counter() - t0)
        seconds = _median(times)
        points.append(
            {
                "batch": batch,
                "per_user_ms_per_tok": seconds * 1e3,
                "agg_tok_per_sec": batch / seconds,
                "steps": args.batch_steps,
            }
        )
        del cache
    return points


def main(argv: list[str]) -> dict[str, Any]:
    """Run the benchmark described by `argv`; return the JSON-able result.

    The phases share one generator in a fixed order (bound, prefill, decode, batch), so a
    seed gives the same tokens and weights on every machine."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        raise UsageError(f"reference: bad arguments: {' '.join(argv)}") from exc
    t_start = time.perf_counter()
    import numpy as np

    shape = MODELS[args.model]
    vocab = shape["vocab"]
    other = "q8" if args.precision == "f32" else "f32"
    rng = np.random.default_rng(args.seed + 1)
    model = build_model(args.model, (args.precision, other), args.seed)
    build_s = time.perf_counter() - t_start

    breakdown = _bandwidth_bound(np, rng, model, (args.precision, other), args.reps)
    model.drop(other)
    model.use(args.precision)
    cache, prefill = _prefill(rng, model, args, vocab)
    decode = _decode(rng, model, cache, args, vocab, breakdown[args.precision])
    del cache
    batch_prompt = max(1, args.batch_prompt_tokens)
    points = _batched(rng, model, args, vocab, batch_prompt)
    return {
        "benchmark": "reference",
        "model": args.model,
        "display": shape["display"],
        "precision": args.precision,
        "shape": {k: v for k, v in shape.items() if k != "display"},
        "parameters": parameter_count(shape),
        "seed": args.seed,
        "threads": args.threads,
        "numpy": np.__version__,
        "build_s": build_s,
        "total_s": time.perf_counter() - t_start,
        "matvec": breakdown,
        "prefill": prefill,
        "decode": decode,
        "batch": {"prompt_tokens": batch_prompt, "points": points},
    }
