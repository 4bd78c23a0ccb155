"""A llama-bench history made the way users make one: `llama-bench -o json` per machine and
build, five repeats per test (llama-bench's default `-r 5`, kept as `samples_ts`), pp512 and
tg128 as separate tests, imported with `bench migrate` and built into a catalog.

Twelve machines, thirteen builds (one a day), and three planted steps (`PLANTED`):
- a tg128 regression on one machine, still in effect;
- a pp512 regression on another, alone (its tg128 unchanged) and still in effect;
- a pp512 regression on a third that a later build fixed.
Run-to-run noise is 1 %, the repeats inside a run spread by about 1.2 %.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchlab.cli import main

MACHINES = tuple(f"lab{n:02d}" for n in range(1, 13))
BUILDS = tuple(5000 + 17 * i for i in range(13))
COMMITS = tuple(f"{0xA1B2C3D + 0x1F3 * i:08x}" for i in range(13))
MODEL_FILE = "models/Llama-3.2-1B-Instruct-Q4_K_M.gguf"
PREFILL, DECODE = "prefill_tok_per_sec", "decode_tok_per_sec"
REPEATS = 5
RUN_NOISE = 0.01
SAMPLE_NOISE = 0.012


@dataclass(frozen=True)
class Planted:
    """One planted step: machine, metric, the index of the first build at the new level,
    its relative size, and the build that undid it (None: still in effect)."""

    machine: str
    metric: str
    first_bad: int
    size: float
    fixed_at: int | None = None


PLANTED = (
    Planted("lab03", DECODE, 6, -0.11),
    Planted("lab07", PREFILL, 8, -0.15),
    Planted("lab10", PREFILL, 4, -0.15, fixed_at=8),
)


def _factor(machine: str, metric: str, build: int) -> float:
    out = 1.0
    for step in PLANTED:
        if step.machine == machine and step.metric == metric and build >= step.first_bad:
            if step.fixed_at is None or build < step.fixed_at:
                out *= 1 + step.size
    return out


def _row(
    rng: np.random.Generator, machine: str, build: int, level: float, n_prompt: int, n_gen: int
) -> dict[str, Any]:
    """One llama-bench JSON row (the fields `-o json` writes that an import reads)."""
    mean = level * (1 + rng.normal(0, RUN_NOISE))
    samples = [float(mean * (1 + rng.normal(0, SAMPLE_NOISE))) for _ in range(REPEATS)]
    tokens = n_prompt + n_gen
    samples_ns = [int(tokens / s * 1e9) for s in samples]
    return {
        "build_commit": COMMITS[build],
        "build_number": BUILDS[build],
        "cpu_info": f"{machine} CPU",
        "gpu_info": "",
        "backends": "CPU",
        "model_filename": MODEL_FILE,
        "model_type": "llama 1B Q4_K - Medium",
        "model_size": 807689216,
        "model_n_params": 1235814432,
        "n_batch": 2048,
        "n_ubatch": 512,
        "n_threads": 8,
        "type_k": "f16",
        "type_v": "f16",
        "n_gpu_layers": 99,
        "split_mode": "layer",
        "main_gpu": 0,
        "no_kv_offload": False,
        "flash_attn": False,
        "tensor_split": "0.00",
        "use_mmap": True,
        "embeddings": False,
        "n_prompt": n_prompt,
        "n_gen": n_gen,
        "n_depth": 0,
        "test_time": f"2026-03-{1 + build:02d}T{8 + n_gen // 128:02d}:00:00Z",
        "avg_ns": int(np.mean(samples_ns)),
        "stddev_ns": int(np.std(samples_ns, ddof=1)),
        "avg_ts": float(np.mean(samples)),
        "stddev_ts": float(np.std(samples, ddof=1)),
        "samples_ns": samples_ns,
        "samples_ts": samples,
    }


def write_outputs(root: Path, seed: int = 34) -> dict[str, list[Path]]:
    """The llama-bench JSON files, one per machine and build: {machine: [paths]}."""
    rng = np.random.default_rng(seed)
    out: dict[str, list[Path]] = {}
    for number, machine in enumerate(MACHINES):
        pp, tg = 400.0 + 37 * number, 40.0 + 3.1 * number
        for build in range(len(BUILDS)):
            rows = [
                _row(rng, machine, build, pp * _factor(machine, PREFILL, build), 512, 0),
                _row(rng, machine, build, tg * _factor(machine, DECODE, build), 0, 128),
            ]
            path = root / machine / f"b{BUILDS[build]}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(rows, indent=2) + "\n")
            out.setdefault(machine, []).append(path)
    return out


def make_store(store: Path, scratch: Path, seed: int = 34) -> Path:
    """`bench migrate` every machine's outputs into `store`, then `bench catalog build`."""
    for machine, paths in write_outputs(scratch, seed).items():
        argv = ["--store", str(store), "migrate", *map(str, paths), "--machine-id", machine]
        if main(argv) != 0:
            raise RuntimeError(f"bench migrate failed for {machine}")
    if main(["--store", str(store), "catalog", "build"]) != 0:
        raise RuntimeError("bench catalog build failed")
    return store


def make_repo_store(root: Path) -> Path:
    """A repository's store under `root` (repo/experiments/benchmark), filled by `make_store`
    from llama-bench outputs written to root/outputs."""
    store = root / "repo" / "experiments" / "benchmark"
    store.mkdir(parents=True)
    return make_store(store, root / "outputs")


def first_bad_build(step: Planted) -> str:
    """The build a planted step's first bad run was made with, as `version_label` reads it
    (the number llama-bench reports)."""
    return str(BUILDS[step.first_bad])
