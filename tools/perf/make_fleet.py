"""Write a synthetic fleet of run dirs into a store, for tests and the catalog benchmark.

    python tools/perf/make_fleet.py --runs 100000 --out /tmp/fleet [--seed 0] [--workers N]

Each run is a realistic run dir under `<out>/runs/by-machine/<machine>/<run-id>/`:
`manifest.json`, `kernel.json`, `batch.json`, and `record.json` for most (imported runs have
none). A few runs failed: they hold only a manifest and a failed record. Every machine gets a
private `specs.json` (with a hostname, which the public catalog must never show).

Run `i` depends only on (seed, i, step), never on how many runs are written, so a later call with
`first=N` (and the same `step_s`) adds new runs to a fleet without touching the old ones. That
purity is also what makes the generation parallel: worker processes each write a contiguous range
of indices, and the bytes are the same whatever the number of workers. Files are written with
plain `json.dumps` (no pydantic) and `os.open`/`os.write` (no pathlib, no buffered file objects)
because a million runs must take minutes: at that size the fixed cost per file is the budget.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import multiprocessing
import os
import random
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

BASE_TIME = datetime(2025, 1, 6, 8, 0, 0, tzinfo=timezone.utc)
SPAN_S = 180 * 24 * 3600
"""Runs are spread evenly over about six months, whatever their number."""

# machine id -> (hostname, os, arch, cpu model, physical, logical, ram GB, gpu or None,
#                relative speed, largest batch, weight in the fleet, tags)
MACHINES: dict[str, dict[str, Any]] = {
    "anthony-laptop": {
        "hostname": "ANTHONY-WIN",
        "os": ("Windows 11 Pro", "10.0.26200", "Windows NT"),
        "arch": "x86_64",
        "cpu": ("Intel64 Family 6 Model 186", 6, 20),
        "ram_gb": 64,
        "gpu": {"model": "NVIDIA RTX 4070", "memory_gb": 12, "compute_capability": "8.9"},
        "speed": 6.0,
        "max_batch": 256,
        "weight": 3,
        "tags": ["amd64", "cuda", "wsl2", "laptop"],
    },
    "mac-m3pro": {
        "hostname": "MacBook-Pro.local",
        "os": ("macOS", "14.5", "Darwin 23.5.0"),
        "arch": "arm64",
        "cpu": ("Apple M3 Pro", 12, 12),
        "ram_gb": 36,
        "gpu": {"model": "Apple M3 Pro", "memory_gb": 36},
        "speed": 4.0,
        "max_batch": 128,
        "weight": 2,
        "tags": ["arm64", "metal", "laptop"],
    },
    "pi5": {
        "hostname": "raspberrypi",
        "os": ("Debian GNU/Linux 12", "12", "6.6.31+rpt-rpi-2712"),
        "arch": "aarch64",
        "cpu": ("Cortex-A76", 4, 4),
        "ram_gb": 8,
        "gpu": None,
        "speed": 0.4,
        "max_batch": 16,
        "weight": 2,
        "tags": ["arm64", "sbc", "edge"],
    },
    "a100-box": {
        "hostname": "gpu-node-07.internal.example",
        "os": ("Ubuntu 22.04.4 LTS", "22.04", "5.15.0-105-generic"),
        "arch": "x86_64",
        "cpu": ("AMD EPYC 7763 64-Core Processor", 64, 128),
        "ram_gb": 512,
        "gpu": {"model": "NVIDIA A100-SXM4-80GB", "memory_gb": 80, "compute_capability": "8.0"},
        "speed": 30.0,
        "max_batch": 512,
        "weight": 2,
        "tags": ["amd64", "cuda", "datacenter"],
    },
    "k8s-cpu-pod-0": {
        "hostname": "bench-7d9f8c6b5-x2k4p",
        "os": ("Ubuntu 24.04 LTS", "24.04", "6.8.0-1008-gke"),
        "arch": "x86_64",
        "cpu": ("Intel Xeon Platinum 8481C", 8, 16),
        "ram_gb": 32,
        "gpu": None,
        "speed": 1.5,
        "max_batch": 64,
        "weight": 2,
        "tags": ["amd64", "k8s", "pod"],
    },
    "k8s-cpu-pod-1": {
        "hostname": "bench-7d9f8c6b5-q8m2z",
        "os": ("Ubuntu 24.04 LTS", "24.04", "6.8.0-1008-gke"),
        "arch": "x86_64",
        "cpu": ("Intel Xeon Platinum 8481C", 8, 16),
        "ram_gb": 32,
        "gpu": None,
        "speed": 1.5,
        "max_batch": 64,
        "weight": 2,
        "tags": ["amd64", "k8s", "pod"],
    },
    "k8s-l4-pod": {
        "hostname": "bench-gpu-5c4d7-ll9wt",
        "os": ("Ubuntu 22.04.4 LTS", "22.04", "6.1.85+"),
        "arch": "x86_64",
        "cpu": ("AMD EPYC 7B13", 4, 8),
        "ram_gb": 48,
        "gpu": {"model": "NVIDIA L4", "memory_gb": 24, "compute_capability": "8.9"},
        "speed": 10.0,
        "max_batch": 256,
        "weight": 1,
        "tags": ["amd64", "k8s", "pod", "cuda"],
    },
}

# model slug -> (display name, family, parameters, source, relative cost)
MODELS: dict[str, tuple[str, str, str, str, float]] = {
    "smollm2-135m": ("SmolLM2-135M", "smollm2", "135M", "HuggingFaceTB/SmolLM2-135M-Instruct", 1),
    "qwen2.5-0.5b": ("Qwen2.5-0.5B", "qwen2.5", "0.5B", "Qwen/Qwen2.5-0.5B-Instruct", 3.7),
    "llama-3.2-1b": ("Llama-3.2-1B", "llama-3.2", "1.2B", "meta-llama/Llama-3.2-1B-Instruct", 9),
    "phi-3-mini": ("Phi-3-mini", "phi-3", "3.8B", "microsoft/Phi-3-mini-4k-instruct", 28),
}

# precision -> (quantization label, speed factor)
PRECISIONS: dict[str, tuple[str, float]] = {
    "f32": ("F32", 1.0),
    "bf16": ("BF16", 1.7),
    "q8": ("Q8_0", 2.6),
    "q4": ("Q4_K_M", 3.9),
}

BATCH_SIZES = (1, 4, 8, 16, 32, 64, 128, 256, 512)
PREFILL_SIZES = (16, 64, 256)
FAILURES = (
    ("measurement", "model does not fit: needs {need} GB, device has {have} GB"),
    ("transport", "ssh: connection reset by peer after 41.2 s"),
    ("parse", "llama-bench printed no result table (exit 0); raw output kept"),
)

_MACHINE_POOL = [m for m, spec in MACHINES.items() for _ in range(spec["weight"])]
_MODEL_IDS = list(MODELS)
_PRECISION_IDS = list(PRECISIONS)
_ENCODER = json.JSONEncoder(sort_keys=True)
"""`json.dumps(doc, sort_keys=True)` builds a new encoder on every call; one shared encoder
writes the same bytes without that cost (four documents per run)."""

CHUNK = 2_000
"""Indices per task handed to a worker: small enough to keep both cores busy to the end, large
enough that the run ids sent back are a small part of the work."""
PARALLEL_FROM = 2 * CHUNK
"""Fewer runs than this are written in-process: the tests' small fleets should not pay for (or
depend on) a process pool."""


def _iso(moment: datetime) -> str:
    # The same text as strftime("%Y-%m-%dT%H:%M:%SZ") (years here have four digits), at a
    # fraction of its cost: four timestamps per run.
    return (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}"
        f"T{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}Z"
    )


def _stamp(moment: datetime) -> str:
    """The run id's compact timestamp, as strftime("%Y%m%dT%H%M%SZ") writes it."""
    return (
        f"{moment.year:04d}{moment.month:02d}{moment.day:02d}"
        f"T{moment.hour:02d}{moment.minute:02d}{moment.second:02d}Z"
    )


def _hash8(obj: Any) -> str:
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:8]


@functools.cache
def _spec_hash(machine: str, model_id: str, precision: str) -> str:
    """The spec id's hash: the config is a function of the machine, so this is a function of
    7 x 4 x 4 choices, computed once each instead of once per run."""
    mspec = MACHINES[machine]
    config = {
        "batch_sizes": [b for b in BATCH_SIZES if b <= mspec["max_batch"]],
        "workers": mspec["cpu"][2],
        "decode_steps": 32,
        "prefill_sizes": list(PREFILL_SIZES),
    }
    return _hash8({"machine": machine, "model": model_id, "precision": precision, **config})


def specs_document(machine: str) -> dict[str, Any]:
    """The private `specs.json` of one machine: hostname included, as onboarding writes it."""
    spec = MACHINES[machine]
    cpu_model, physical, logical = spec["cpu"]
    os_name, os_version, kernel = spec["os"]
    hardware: dict[str, Any] = {
        "cpu": {
            "model": cpu_model,
            "cores_physical": physical,
            "cores_logical": logical,
            "architecture": spec["arch"],
        },
        "ram_gb": spec["ram_gb"],
        "storage": {"type": "NVMe SSD", "size_gb": 1024},
    }
    if spec["gpu"]:
        hardware["gpu"] = [dict(spec["gpu"])]
    return {
        "$schema": "benchmark/machine-specs.v1",
        "machine_id": machine,
        "hostname": spec["hostname"],
        "registered_at": _iso(BASE_TIME - timedelta(days=3)),
        "hardware": hardware,
        "os": {"name": os_name, "version": os_version, "kernel": kernel},
        "runtime": {"python_version": "3.11.8"},
        "tags": list(spec["tags"]),
    }


def run_documents(seed: int, index: int, step_s: int) -> dict[str, Any]:
    """Run `index` of the fleet: its machine, run id and documents (a pure function)."""
    rng = random.Random(f"{seed}:{index}")
    machine = rng.choice(_MACHINE_POOL)
    mspec = MACHINES[machine]
    model_id = rng.choice(_MODEL_IDS)
    name, family, params, source, cost = MODELS[model_id]
    precision = rng.choice(_PRECISION_IDS)
    quant, pfactor = PRECISIONS[precision]
    moment = BASE_TIME + timedelta(seconds=index * step_s + rng.randrange(max(step_s // 2, 1)))
    stamp = _stamp(moment)
    batch_sizes = [b for b in BATCH_SIZES if b <= mspec["max_batch"]]
    threads = mspec["cpu"][2]
    config = {
        "batch_sizes": batch_sizes,
        "workers": threads,
        "decode_steps": 32,
        "prefill_sizes": list(PREFILL_SIZES),
    }
    spec_hash = _spec_hash(machine, model_id, precision)
    spec_id = f"{machine}-{model_id}-{precision}-batch-{spec_hash}"
    run_id = f"{spec_id}-{stamp}"
    backend = rng.choice(("llama-bench", "llama-bench", "reference"))
    manifest = {
        "$schema": "benchmark/run-manifest.v1",
        "run_id": run_id,
        "machine_id": machine,
        "timestamp": _iso(moment),
        "git": {"rev": f"{rng.getrandbits(28):07x}", "branch": "main", "dirty": False},
        "harness": {"name": "benchlab", "version": "0.1.0"},
        "model": {
            "name": name,
            "family": family,
            "parameters": params,
            "source": source,
            "precision": precision,
            "quantization": quant,
        },
        "config": config,
        "tags": ["kernel", "batch"] + (["nightly"] if rng.random() < 0.3 else []),
        "artifacts": {"kernel": "kernel.json", "batch": "batch.json"},
        "backend": backend,
        "mode": "batch",
        "spec_id": spec_id,
        "experiment": "fleet",
    }
    docs: dict[str, Any] = {"machine": machine, "run_id": run_id, "manifest.json": manifest}
    roll = rng.random()
    too_big = mspec["ram_gb"] < 16 and model_id == "phi-3-mini" and precision == "f32"
    failed = too_big or roll < 0.03
    has_record = failed or rng.random() < 0.85
    started = moment + timedelta(seconds=2)
    duration = round(rng.uniform(20, 600), 1)
    record: dict[str, Any] = {
        "$schema": "benchmark/run-record.v1",
        "run_id": run_id,
        "spec_id": spec_id,
        "machine_id": machine,
        "device": machine,
        "experiment": "fleet",
        "status": "ok",
        "warnings": [],
        "attempt": 1,
        "attempts": 3,
        "tags": [],
        "timings": {
            "started_at": _iso(started),
            "finished_at": _iso(started + timedelta(seconds=duration)),
            "duration_s": duration,
        },
        "spec": {
            "spec_id": spec_id,
            "experiment": "fleet",
            "device": machine,
            "machine_id": machine,
            "backend": backend,
            "model": model_id,
            "precision": precision,
            "mode": "batch",
            "threads": threads,
            "batch_sizes": batch_sizes,
        },
    }
    if failed:
        kind, text = FAILURES[0] if too_big else rng.choice(FAILURES)
        record.update(
            status="failed",
            failure_kind=kind,
            error=text.format(need=round(cost * 0.6, 1), have=mspec["ram_gb"]),
        )
        if kind == "transport":
            record.update(attempt=3, warnings=["retried 2 times after transport failures"])
        docs["record.json"] = record
        return docs

    speed = mspec["speed"] * pfactor / cost * rng.uniform(0.9, 1.1)
    decode = round(140.0 * speed, 2)
    prefill = [
        {
            "tokens": tokens,
            "median_ms": round(tokens / (decode * (6 + tokens / 64)) * 1000, 3),
            "tok_per_sec": round(decode * (6 + tokens / 64), 2),
        }
        for tokens in PREFILL_SIZES
    ]
    saturation = 8 + mspec["speed"] * 10
    points = []
    for batch in batch_sizes:
        agg = decode * 0.55 * batch / (1 + batch / saturation) * rng.uniform(0.97, 1.03)
        points.append(
            {
                "batch": batch,
                "per_user_ms_per_tok": round(1000 * batch / agg, 3),
                "agg_tok_per_sec": round(agg, 2),
                "speedup_vs_baseline": round(agg / decode, 2),
            }
        )
    best = max(points, key=lambda p: p["agg_tok_per_sec"])
    docs["kernel.json"] = {
        "$schema": "benchmark/kernel-results.v1",
        "run_id": run_id,
        "engine": f"{backend} {quant}",
        "precision": quant,
        "model": name,
        "benchmark": {
            "prefill": prefill,
            "decode": {
                "prompt_tokens": 16,
                "decode_steps": 32,
                "reps": 5,
                "per_token_median_ms": round(1000 / decode, 3),
                "tok_per_sec": decode,
            },
        },
    }
    docs["batch.json"] = {
        "$schema": "benchmark/batch-results.v1",
        "run_id": run_id,
        "engine": f"{backend} batched decode {quant}",
        "model": name,
        "precision": quant,
        "workers": threads,
        "baseline": {"batch": 1, "tok_per_sec": decode},
        "peak": {
            "batch": best["batch"],
            "agg_tok_per_sec": best["agg_tok_per_sec"],
            "speedup_vs_baseline": best["speedup_vs_baseline"],
        },
        "points": points,
    }
    if has_record:
        record["metrics"] = {
            "peak_tok_per_sec": best["agg_tok_per_sec"],
            "decode_tok_per_sec": decode,
        }
        docs["record.json"] = record
    return docs


def default_step(runs: int) -> int:
    """Seconds between consecutive runs so that `runs` runs span about six months."""
    return max(1, SPAN_S // max(runs, 1))


def _write_all(fd: int, data: bytes) -> None:
    """Write all of `data` to `fd`, then close it: no file object, no buffer, no encoding."""
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def _write_file(path: str, data: bytes) -> None:
    """Create or truncate `path` with `data` (what Path.write_text did, in three syscalls)."""
    _write_all(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666), data)


def _ensure_machine(by_machine: str, machine: str) -> None:
    """The machine's dir and its specs.json, written only if absent. O_EXCL makes this safe
    when two workers meet a machine at once: one writes, the other sees the file and moves on
    (the content is the same either way)."""
    os.makedirs(os.path.join(by_machine, machine), exist_ok=True)
    specs = os.path.join(by_machine, machine, "specs.json")
    if os.path.exists(specs):
        return
    try:
        fd = os.open(specs, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except FileExistsError:
        return
    _write_all(fd, json.dumps(specs_document(machine), indent=2, sort_keys=True).encode())


def _write_range(out: str, seed: int, start: int, stop: int, step: int) -> list[str]:
    """Write runs `start .. stop-1`; return their ids in index order. The unit of work of a
    worker, and the whole job when the fleet is small."""
    by_machine = os.path.join(out, "runs", "by-machine")
    encode = _ENCODER.encode
    made: set[str] = set()
    run_ids = []
    for index in range(start, stop):
        docs = run_documents(seed, index, step)
        machine = docs.pop("machine")
        run_id = docs.pop("run_id")
        if machine not in made:
            _ensure_machine(by_machine, machine)
            made.add(machine)
        run_dir = os.path.join(by_machine, machine, run_id)
        try:
            os.mkdir(run_dir)
        except FileExistsError:
            pass
        for name, doc in docs.items():
            _write_file(os.path.join(run_dir, name), encode(doc).encode())
        run_ids.append(run_id)
    return run_ids


def _write_chunk(job: tuple[str, int, int, int, int]) -> list[str]:
    return _write_range(*job)


def _pool_context() -> Any:
    """A fork context where the platform has one, else None (write in-process). Fork is what
    lets a worker use this module even when it was loaded by path under another name, as
    tests/kit/fleet.py does; a spawned worker could not import it."""
    if "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return None


def make_fleet(
    out: Path,
    runs: int,
    seed: int = 0,
    *,
    first: int = 0,
    step_s: int | None = None,
    workers: int | None = None,
) -> list[str]:
    """Write runs `first .. first+runs-1` into the store at `out`; return their run ids in
    index order.

    `workers` processes (default: os.cpu_count()) each write contiguous chunks of indices;
    the files are the same bytes whatever `workers` is, since run `i` is a pure function of
    (seed, i, step). Small fleets are written in-process.
    """
    step = step_s if step_s is not None else default_step(first + runs)
    stop = first + runs
    count = (os.cpu_count() or 1) if workers is None else max(1, workers)
    context = _pool_context() if count > 1 and runs >= PARALLEL_FROM else None
    if context is None:
        return _write_range(str(out), seed, first, stop, step)
    jobs = [
        (str(out), seed, start, min(start + CHUNK, stop), step)
        for start in range(first, stop, CHUNK)
    ]
    run_ids: list[str] = []
    with context.Pool(min(count, len(jobs))) as pool:
        for chunk in pool.imap(_write_chunk, jobs):
            run_ids.extend(chunk)
    return run_ids


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, required=True, help="how many runs to write")
    parser.add_argument("--out", type=Path, required=True, help="the store root to write into")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--first", type=int, default=0, help="index of the first run (append)")
    parser.add_argument("--step-s", type=int, default=None, help="seconds between runs")
    parser.add_argument(
        "--workers", type=int, default=None, help="processes writing runs (default: all cores)"
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    make_fleet(
        args.out, args.runs, args.seed, first=args.first, step_s=args.step_s, workers=args.workers
    )
    elapsed = time.perf_counter() - started
    print(f"fleet: {args.runs} runs in {args.out} ({elapsed:.1f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
