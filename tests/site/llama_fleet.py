"""A llama-bench history made the way users make it: `llama-bench -o json` files (pp512 and
tg128, five repeats each as llama-bench runs by default, `samples_ts` included), one per
machine and build, imported with `bench migrate` and built with `bench catalog build`.

`write_llama_fleet(store, machines=12, builds=13)`: machine `m<i>` runs every build `b<n>`;
the even machines run Q4_0, the odd ones Q8_0 (two precisions); machine speeds differ by
25 % steps and 3 % a machine; build `b<STEP_BUILD>` and later lose 11 % of tg128 on every machine.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from benchlab.catalog.build import build
from benchlab.importers import import_llama_bench
from benchlab.layout import Store

FIRST_BUILD = 5000
STEP_BUILD = 5008
"""The first build whose tg128 is 11 % slower."""
MODEL = "llama 1B"


def machine_ids(machines: int) -> list[str]:
    return [f"m{i:02d}" for i in range(machines)]


def build_numbers(builds: int) -> list[int]:
    return [FIRST_BUILD + i for i in range(builds)]


def _row(machine: int, build: int, test: str, rng: random.Random) -> dict[str, object]:
    quant = "Q4_0" if machine % 2 == 0 else "Q8_0"
    speed = 1.25 ** (machine % 5) * 1.03**machine * (1.3 if quant == "Q4_0" else 1.0)
    prompt, gen = (512, 0) if test == "pp" else (0, 128)
    rate = speed * (600.0 if test == "pp" else 40.0)
    if test == "tg" and build >= STEP_BUILD:
        rate *= 0.89
    samples = [round(rate * rng.gauss(1.0, 0.012), 4) for _ in range(5)]
    tokens = prompt + gen
    day = build - FIRST_BUILD
    return {
        "build_commit": f"{build:04x}abcd",
        "build_number": build,
        "cpu_info": f"CPU {machine}",
        "gpu_info": "",
        "backends": "CPU",
        "model_filename": f"models/llama-1b-{quant}.gguf",
        "model_type": f"llama 1B {quant}",
        "model_size": 700_000_000 if quant == "Q4_0" else 1_300_000_000,
        "model_n_params": 1_235_814_400,
        "n_batch": 2048,
        "n_ubatch": 512,
        "n_threads": 8,
        "type_k": "f16",
        "type_v": "f16",
        "n_gpu_layers": 0,
        "flash_attn": False,
        "use_mmap": True,
        "n_prompt": prompt,
        "n_gen": gen,
        "n_depth": 0,
        "test_time": f"2026-01-{day + 1:02d}T{machine:02d}:{10 if test == 'pp' else 11}:00Z",
        "avg_ns": int(tokens / (sum(samples) / 5) * 1e9),
        "stddev_ns": 1000,
        "avg_ts": sum(samples) / 5,
        "stddev_ts": 1.0,
        "samples_ns": [int(tokens / s * 1e9) for s in samples],
        "samples_ts": samples,
    }


def write_llama_fleet(root: Path, machines: int = 12, builds: int = 13, seed: int = 3) -> Store:
    """Import a llama-bench history into a fresh store at `root` and build its catalog."""
    root.mkdir(parents=True, exist_ok=True)
    store = Store(root)
    rng = random.Random(seed)
    outputs = root.parent / f"{root.name}-llama-bench"
    outputs.mkdir(parents=True, exist_ok=True)
    for i, machine in enumerate(machine_ids(machines)):
        for number in build_numbers(builds):
            path = outputs / f"{machine}-b{number}.json"
            rows = [_row(i, number, test, rng) for test in ("pp", "tg")]
            path.write_text(json.dumps(rows, indent=1))
            import_llama_bench(store, path, machine)
    build(store, jobs=1)
    return store
