#!/usr/bin/env python3
"""Small llama-architecture GGUF models with random weights, for a real llama-bench.

No model hub is reachable here, and llama-bench measures speed, not answers: a model with
the right shapes and seeded random weights costs what the real one costs per token. So we
write the GGUF ourselves with the `gguf` package and quantize it with the `llama-quantize`
that tools/llama/build.py built.

    python tools/llama/models.py                          # tiny, all four precisions
    python tools/llama/models.py --model smollm2-135m --precision f32 --precision q8_0

Models (shapes as in their config.json; the weights are random, the same for every seed):
- `tiny`: 256 wide, 4 layers, 4 heads (2 KV), ffn 768, vocab 1024, untied output:
  3.67 M parameters, 14.7 MB f32, written in well under a second.
- `smollm2-135m`: SmolLM2-135M's shapes (hidden 576, 30 layers, 9 heads, 3 KV heads,
  ffn 1536, vocab 49152, rope theta 100000, tied embeddings): 134.5 M parameters,
  539 MB f32, 270 MB f16, 144 MB q8_0, 91 MB q4_0 (llama-quantize keeps the tied embedding
  at q8_0); all four take about 40 s on 2 busy cores. The full vocab is kept: it is 28 M of
  the parameters, and the output projection over it is a real part of each token's cost.

Precisions: f32 and f16 are written directly; q8_0 and q4_0 are `llama-quantize` of the f32.
Files are cached by name under `<cache>/models/<model>-<precision>.gguf` (cache as in
build.py: ~/.cache/benchlab/llama or $BENCHLAB_LLAMA_CACHE); delete one to regenerate it.

The tokenizer is a llama/sentencepiece-style vocab: `<unk> <s> </s>`, the 256 byte tokens
`<0x00>`..`<0xFF>` (llama.cpp looks up `<0x0A>` for the newline when it loads an SPM vocab),
then made-up `▁`-prefixed pieces with falling scores.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import numpy as np

HERE = Path(__file__).resolve().parent
SEED = 1234
PRECISIONS = ("f32", "f16", "q8_0", "q4_0")
QUANTIZED = {"q8_0": "Q8_0", "q4_0": "Q4_0"}


def _sibling(name: str) -> ModuleType:
    """tools/llama/<name>.py as a module; tools/ is not a package, and these run as scripts."""
    key = f"benchlab_tools_llama_{name}"
    if key in sys.modules:
        return sys.modules[key]
    spec = importlib.util.spec_from_file_location(key, HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[key] = module
    spec.loader.exec_module(module)
    return module


@dataclass(frozen=True)
class Shape:
    """The hyperparameters a llama GGUF needs; names follow Hugging Face's config.json."""

    name: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    context: int
    rope_theta: float
    rms_eps: float
    tied: bool

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def n_params(self) -> int:
        kv = self.kv_heads * self.head_dim
        attention = 2 * self.hidden * self.hidden + 2 * self.hidden * kv
        per_layer = attention + 3 * self.hidden * self.ffn + 2 * self.hidden  # + 2 norms
        embed = self.vocab * self.hidden
        return embed * (1 if self.tied else 2) + self.layers * per_layer + self.hidden


MODELS = {
    "tiny": Shape("tiny", 256, 4, 4, 2, 768, 1024, 2048, 10000.0, 1e-5, tied=False),
    "smollm2-135m": Shape(
        "smollm2-135m", 576, 30, 9, 3, 1536, 49152, 8192, 100000.0, 1e-5, tied=True
    ),
}


def models_dir(cache_dir: Path | None = None) -> Path:
    """Where the GGUF files live: `<llama cache>/models`."""
    return (cache_dir or _sibling("build").default_cache_dir()).expanduser() / "models"


def model_path(model: str, precision: str, cache_dir: Path | None = None) -> Path:
    return models_dir(cache_dir) / f"{model}-{precision}.gguf"


def vocab(size: int) -> tuple[list[str], list[float], list[int]]:
    """A sentencepiece-style token list with scores and types, `size` tokens long."""
    import gguf

    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL]
    types += [gguf.TokenType.BYTE] * 256
    if size < len(tokens) + 1:
        raise ValueError(f"vocab {size}: need more than {len(tokens)} tokens")
    letters = "abcdefghijklmnopqrstuvwxyz"
    index = 0
    while len(tokens) < size:
        word, n = "", index
        while True:  # base-26 words: a..z, aa.., unique by construction
            word = letters[n % 26] + word
            n = n // 26 - 1
            if n < 0:
                break
        tokens.append("\u2581" + word)
        types.append(gguf.TokenType.NORMAL)
        index += 1
    scores = [0.0, 0.0, 0.0] + [0.0] * 256 + [-float(i) for i in range(size - 259)]
    return tokens, scores, [int(t) for t in types]


def write_gguf(shape: Shape, precision: str, path: Path, seed: int = SEED) -> None:
    """Write an f32 or f16 llama GGUF with seeded random weights to `path`."""
    import gguf

    if precision not in ("f32", "f16"):
        raise ValueError(f"write_gguf writes f32 or f16, not {precision!r}")
    rng = np.random.default_rng(seed)
    matrix_dtype = np.float32 if precision == "f32" else np.float16
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name(f"benchlab random {shape.name}")
    writer.add_context_length(shape.context)
    writer.add_embedding_length(shape.hidden)
    writer.add_block_count(shape.layers)
    writer.add_feed_forward_length(shape.ffn)
    writer.add_head_count(shape.heads)
    writer.add_head_count_kv(shape.kv_heads)
    writer.add_rope_dimension_count(shape.head_dim)
    writer.add_rope_freq_base(shape.rope_theta)
    writer.add_layer_norm_rms_eps(shape.rms_eps)
    writer.add_vocab_size(shape.vocab)
    writer.add_file_type(
        gguf.LlamaFileType.ALL_F32 if precision == "f32" else gguf.LlamaFileType.MOSTLY_F16
    )
    tokens, scores, types = vocab(shape.vocab)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_unk_token_id(0)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)

    def matrix(name: str, rows: int, cols: int) -> None:
        # (out, in) as numpy shapes; the scale keeps activations finite through 30 layers.
        data = rng.standard_normal((rows, cols), dtype=np.float32) * 0.02
        writer.add_tensor(name, data.astype(matrix_dtype, copy=False))

    def norm(name: str) -> None:
        writer.add_tensor(name, np.ones(shape.hidden, dtype=np.float32))

    kv = shape.kv_heads * shape.head_dim
    matrix("token_embd.weight", shape.vocab, shape.hidden)
    for i in range(shape.layers):
        norm(f"blk.{i}.attn_norm.weight")
        matrix(f"blk.{i}.attn_q.weight", shape.hidden, shape.hidden)
        matrix(f"blk.{i}.attn_k.weight", kv, shape.hidden)
        matrix(f"blk.{i}.attn_v.weight", kv, shape.hidden)
        matrix(f"blk.{i}.attn_output.weight", shape.hidden, shape.hidden)
        norm(f"blk.{i}.ffn_norm.weight")
        matrix(f"blk.{i}.ffn_gate.weight", shape.ffn, shape.hidden)
        matrix(f"blk.{i}.ffn_up.weight", shape.ffn, shape.hidden)
        matrix(f"blk.{i}.ffn_down.weight", shape.hidden, shape.ffn)
    norm("output_norm.weight")
    if not shape.tied:
        matrix("output.weight", shape.vocab, shape.hidden)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def quantize(quantize_bin: Path, source: Path, dest: Path, precision: str) -> None:
    """`llama-quantize source dest TYPE`; raise with its output tail when it fails."""
    argv = [str(quantize_bin), str(source), str(dest), QUANTIZED[precision]]
    done = subprocess.run(argv, capture_output=True, text=True, errors="replace")
    if done.returncode != 0 or not dest.is_file():
        tail = (done.stdout + done.stderr)[-2000:]
        raise RuntimeError(f"llama-quantize {precision} failed (exit {done.returncode}):\n{tail}")


def ensure_model(
    model: str = "tiny",
    precision: str = "f32",
    *,
    cache_dir: Path | None = None,
    quantize_bin: Path | None = None,
    log=print,
) -> Path:
    """The cached GGUF for `model` at `precision`, written (and quantized) when missing.

    Quantized files need `llama-quantize`: `quantize_bin`, else the default build's (which
    builds it when the cache has none).
    """
    if model not in MODELS:
        raise ValueError(f"unknown model {model!r}; known: {', '.join(MODELS)}")
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; known: {', '.join(PRECISIONS)}")
    dest = model_path(model, precision, cache_dir)
    if dest.is_file():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    build = _sibling("build")
    with build._locked(dest.parent / f".{dest.name}.lock"):
        if dest.is_file():
            return dest
        started = time.monotonic()
        partial = dest.with_name(f".{dest.name}.{os.getpid()}.partial")
        try:
            if precision in QUANTIZED:
                source = ensure_model(model, "f32", cache_dir=cache_dir, log=log)
                if quantize_bin is None:
                    quantize_bin = build.ensure_build(cache_dir=cache_dir, log=log).llama_quantize
                quantize(quantize_bin, source, partial, precision)
            else:
                write_gguf(MODELS[model], precision, partial)
            partial.rename(dest)
        finally:
            partial.unlink(missing_ok=True)
        size = dest.stat().st_size / 1e6
        log(f"wrote {dest} ({size:.1f} MB) in {time.monotonic() - started:.1f} s")
    return dest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", action="append", choices=sorted(MODELS), default=None)
    parser.add_argument("--precision", action="append", choices=PRECISIONS, default=None)
    parser.add_argument("--cache-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    for model in args.model or ["tiny"]:
        for precision in args.precision or list(PRECISIONS):
            try:
                path = ensure_model(model, precision, cache_dir=args.cache_dir)
            except (RuntimeError, OSError, ValueError) as exc:
                print(f"models.py: {model} {precision}: {exc}", file=sys.stderr)
                return 1
            print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
