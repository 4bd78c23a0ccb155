"""A llama-bench history made the way users make it: `llama-bench -o json` files, one per
machine and build, five repeats per test (llama-bench's default `-r 5`), imported with
`bench migrate` and built into a catalog.

Each test row carries what llama-bench prints: `avg_ts`, `stddev_ts`, `samples_ts`,
`samples_ns`, `cpu_info`, `gpu_info`, `backends`, the model's size and parameters.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from benchlab.cli import main

MODEL_FILE = "models/Qwen2.5-0.5B-Instruct-Q4_K_M.gguf"
MODEL_TYPE = "qwen2 1B Q4_K - Medium"
START = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)


@dataclass
class Machine:
    """One machine of the history: its rates at the first build and what llama-bench says
    about it."""

    name: str
    pp_rate: float
    tg_rate: float
    cpu_info: str = "AMD EPYC 7763 64-Core Processor"
    gpu_info: str = ""
    backends: str = "CPU"
    threads: int = 8
    pp: Sequence[int] = (512,)
    tg: Sequence[int] = (128,)


@dataclass
class History:
    """Machines and builds; `factor(machine, build index, test)` scales a test's rate (a
    planted step). `spread`: the repeats' relative standard deviation."""

    machines: list[Machine]
    builds: list[int]
    factor: Callable[[str, int, str], float] = lambda machine, index, test: 1.0
    spread: float = 0.012
    repeats: int = 5
    seed: int = 7
    files: list[tuple[Path, str]] = field(default_factory=list)


def commit_of(build: int) -> str:
    return f"{build * 2654435761 % 16**8:08x}"


def _row(
    machine: Machine,
    build: int,
    moment: datetime,
    n_prompt: int,
    n_gen: int,
    rate: float,
    history: History,
    rng: random.Random,
) -> dict[str, Any]:
    samples = [rate * (1 + rng.gauss(0, history.spread)) for _ in range(history.repeats)]
    tokens = n_prompt + n_gen
    mean = math.fsum(samples) / len(samples)
    sd = math.sqrt(math.fsum((s - mean) ** 2 for s in samples) / (len(samples) - 1))
    ns = [round(tokens / s * 1e9) for s in samples]
    return {
        "build_commit": commit_of(build),
        "build_number": build,
        "cpu_info": machine.cpu_info,
        "gpu_info": machine.gpu_info,
        "backends": machine.backends,
        "model_filename": MODEL_FILE,
        "model_type": MODEL_TYPE,
        "model_size": 491400032,
        "model_n_params": 494032768,
        "n_batch": 2048,
        "n_ubatch": 512,
        "n_threads": machine.threads,
        "type_k": "f16",
        "type_v": "f16",
        "n_gpu_layers": 99 if machine.gpu_info else 0,
        "split_mode": "layer",
        "main_gpu": 0,
        "no_kv_offload": False,
        "flash_attn": False,
        "use_mmap": True,
        "embeddings": False,
        "n_prompt": n_prompt,
        "n_gen": n_gen,
        "n_depth": 0,
        "test_time": moment.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "avg_ns": round(math.fsum(ns) / len(ns)),
        "stddev_ns": 0,
        "avg_ts": round(mean, 6),
        "stddev_ts": round(sd, 6),
        "samples_ns": ns,
        "samples_ts": [round(s, 3) for s in samples],
    }


def write_files(history: History, out: Path) -> list[tuple[Path, str]]:
    """One `-o json` file per machine and build, the builds a day apart."""
    rng = random.Random(history.seed)
    files = []
    out.mkdir(parents=True, exist_ok=True)
    for index, build in enumerate(history.builds):
        moment = START + timedelta(days=index)
        for machine in history.machines:
            rows = []
            for n_prompt in machine.pp:
                rate = machine.pp_rate * history.factor(machine.name, index, f"pp{n_prompt}")
                rows.append(_row(machine, build, moment, n_prompt, 0, rate, history, rng))
            for n_gen in machine.tg:
                rate = machine.tg_rate * history.factor(machine.name, index, f"tg{n_gen}")
                rows.append(_row(machine, build, moment, 0, n_gen, rate, history, rng))
            path = out / f"{machine.name}-b{build}.json"
            path.write_text(json.dumps(rows, indent=2))
            files.append((path, machine.name))
    history.files = files
    return files


def import_history(history: History, store: Path, out: Path) -> None:
    """Write the files, `bench migrate` each for its machine, then `bench catalog build`."""
    for path, machine in write_files(history, out):
        code = main(["--store", str(store), "migrate", str(path), "--machine-id", machine])
        assert code == 0, path
    assert main(["--store", str(store), "catalog", "build"]) == 0
