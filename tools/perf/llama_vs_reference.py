#!/usr/bin/env python3
"""benchlab's numpy reference backend against llama.cpp, on the same model shape.

    python tools/perf/llama_vs_reference.py [--threads 1 2] [--repeats 3] [-p 64] [-n 16]

Both run SmolLM2-135M's shapes with random weights in f32: the reference backend's
`smollm2-135m` (benchlab.agent.reference_bench, numpy) and tools/llama/models.py's
`smollm2-135m-f32.gguf` under the default build's llama-bench. Each side runs as its own
process per repetition (so each pays its own start, and a noisy neighbour hits one sample,
not all), at the same thread count (the BLAS pools pinned as the reference backend pins
them; llama-bench's `-t`), the same prompt and the same number of generated tokens. Each
repetition's prefill and decode tok/s are those the tool itself reports (the reference's
median over its `--reps`, llama-bench's `avg_ts` over its `-r`); the table shows the median
over `--repeats` and the ratio llama.cpp / reference.

One difference is kept and said: the reference decodes after its prompt (at context depth
`-p`), llama-bench's tg test decodes from an empty context; at 64 tokens of context the
attention's share of a 135M model's per-token cost is small next to its weight matmuls.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
LLAMA_TOOLS = REPO / "tools" / "llama"
REFERENCE = (
    "import json, sys\n"
    "from benchlab.agent.reference_bench import main\n"
    "print(json.dumps(main(sys.argv[1:])))\n"
)


def _llama_tools() -> tuple[Any, Any]:
    """tools/llama's build.py and models.py (scripts, loaded as the tests load them)."""
    key = "benchlab_tools_llama_models"
    models = sys.modules.get(key)
    if models is None:
        spec = importlib.util.spec_from_file_location(key, LLAMA_TOOLS / "models.py")
        assert spec is not None and spec.loader is not None
        models = importlib.util.module_from_spec(spec)
        sys.modules[key] = models
        spec.loader.exec_module(models)
    return models._sibling("build"), models


def reference_once(threads: int, prompt: int, gen: int, reps: int) -> tuple[float, float]:
    """(prefill tok/s at `prompt`, decode tok/s) of one reference-backend process."""
    from benchlab.benchmarks.common import thread_env

    argv = [
        sys.executable,
        "-c",
        REFERENCE,
        "--model=smollm2-135m",
        "--precision=f32",
        f"--threads={threads}",
        f"--prompt-tokens={prompt}",
        f"--prefill-sizes={prompt}",
        f"--decode-steps={gen}",
        f"--reps={reps}",
        "--batch-sizes=1",
        "--batch-steps=1",
    ]
    env = {**os.environ, **thread_env(threads)}
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"reference backend failed: {done.stderr[-2000:]}")
    data = json.loads(done.stdout)
    (point,) = [p for p in data["prefill"] if p["tokens"] == prompt]
    return float(point["tok_per_sec"]), float(data["decode"]["tok_per_sec"])


def llama_once(
    binary: Path, model: Path, threads: int, prompt: int, gen: int, reps: int
) -> tuple[float, float]:
    """(pp tok/s, tg tok/s) of one llama-bench process."""
    argv = [str(binary), "-m", str(model), "-p", str(prompt), "-n", str(gen)]
    argv += ["-t", str(threads), "-r", str(reps), "-ngl", "0", "-o", "json"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"llama-bench failed: {done.stderr[-2000:]}")
    rows = json.loads(done.stdout)
    pp = next(r["avg_ts"] for r in rows if r["n_prompt"] == prompt and r["n_gen"] == 0)
    tg = next(r["avg_ts"] for r in rows if r["n_gen"] == gen and r["n_prompt"] == 0)
    return float(pp), float(tg)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeats", type=int, default=3, help="processes per side (median)")
    parser.add_argument("--reps", type=int, default=3, help="repetitions inside each process")
    parser.add_argument("-p", "--prompt", type=int, default=64)
    parser.add_argument("-n", "--gen", type=int, default=16)
    parser.add_argument("--format", choices=("table", "json"), default="table")
    args = parser.parse_args(argv)
    build_tool, models = _llama_tools()
    build = build_tool.ensure_build(log=lambda line: print(line, file=sys.stderr))
    model = models.ensure_model(
        "smollm2-135m", "f32", log=lambda line: print(line, file=sys.stderr)
    )
    rows = []
    for threads in args.threads:
        ref = [
            reference_once(threads, args.prompt, args.gen, args.reps) for _ in range(args.repeats)
        ]
        lcpp = [
            llama_once(build.llama_bench, model, threads, args.prompt, args.gen, args.reps)
            for _ in range(args.repeats)
        ]
        for index, phase in ((0, f"prefill pp{args.prompt}"), (1, f"decode tg{args.gen}")):
            ref_median = statistics.median(r[index] for r in ref)
            llama_median = statistics.median(r[index] for r in lcpp)
            rows.append(
                {
                    "threads": threads,
                    "phase": phase,
                    "reference_tok_per_sec": ref_median,
                    "llama_tok_per_sec": llama_median,
                    "ratio": llama_median / ref_median,
                    "reference_samples": [r[index] for r in ref],
                    "llama_samples": [r[index] for r in lcpp],
                }
            )
    if args.format == "json":
        print(json.dumps(rows, indent=2, sort_keys=True))
        return 0
    print(
        f"smollm2-135m f32, p{args.prompt}/n{args.gen}, median of {args.repeats} processes; "
        f"llama.cpp {build.commit} (b{build.build_number})"
    )
    print(f"{'threads':>7}  {'phase':<12} {'reference t/s':>14} {'llama.cpp t/s':>14} {'ratio':>7}")
    for row in rows:
        print(
            f"{row['threads']:>7}  {row['phase']:<12} {row['reference_tok_per_sec']:>14.2f} "
            f"{row['llama_tok_per_sec']:>14.2f} {row['ratio']:>6.2f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
