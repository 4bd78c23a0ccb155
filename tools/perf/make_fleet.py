"""Write a synthetic fleet of run dirs into a store, for tests and the catalog benchmark.

    python tools/perf/make_fleet.py --runs 100000 --out /tmp/fleet [--seed 0]

Each run is a realistic run dir under `<out>/runs/by-machine/<machine>/<run-id>/`:
`manifest.json`, `kernel.json`, `batch.json`, and `record.json` for most (imported runs have
none). A few runs failed: they hold only a manifest and a failed record. Every machine gets a
private `specs.json` (with a hostname, which the public catalog must never show).

Run `i` depends only on (seed, i, step), never on how many runs are written, so a later call with
`first=N` (and the same `step_s`) adds new runs to a fleet without touching the old ones. Files are
written with plain `json.dumps` (no pydantic) because 100,000 runs must take seconds.
"""

from __future__ import annotations

import argparse
import hashlib
import json
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


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _hash8(obj: Any) -> str:
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:8]


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
    model_id = rng.choice(list(MODELS))
    name, family, params, source, cost = MODELS[model_id]
    precision = rng.choice(list(PRECISIONS))
    quant, pfactor = PRECISIONS[precision]
    moment = BASE_TIME + timedelta(seconds=index * step_s + rng.randrange(max(step_s // 2, 1)))
    stamp = moment.strftime("%Y%m%dT%H%M%SZ")
    batch_sizes = [b for b in BATCH_SIZES if b <= mspec["max_batch"]]
    threads = mspec["cpu"][2]
    config = {
        "batch_sizes": batch_sizes,
        "workers": threads,
        "decode_steps": 32,
        "prefill_sizes": list(PREFILL_SIZES),
    }
    spec_hash = _hash8({"machine": machine, "model": model_id, "precision": precision, **config})
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


def make_fleet(
    out: Path, runs: int, seed: int = 0, *, first: int = 0, step_s: int | None = None
) -> list[str]:
    """Write runs `first .. first+runs-1` into the store at `out`; return their run ids."""
    step = step_s if step_s is not None else default_step(first + runs)
    by_machine = out / "runs" / "by-machine"
    made_dirs: set[str] = set()
    run_ids = []
    for index in range(first, first + runs):
        docs = run_documents(seed, index, step)
        machine = docs.pop("machine")
        run_id = docs.pop("run_id")
        if machine not in made_dirs:
            (by_machine / machine).mkdir(parents=True, exist_ok=True)
            specs = by_machine / machine / "specs.json"
            if not specs.exists():
                specs.write_text(json.dumps(specs_document(machine), indent=2, sort_keys=True))
            made_dirs.add(machine)
        run_dir = by_machine / machine / run_id
        run_dir.mkdir(exist_ok=True)
        for name, doc in docs.items():
            (run_dir / name).write_text(json.dumps(doc, sort_keys=True))
        run_ids.append(run_id)
    return run_ids


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, required=True, help="how many runs to write")
    parser.add_argument("--out", type=Path, required=True, help="the store root to write into")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--first", type=int, default=0, help="index of the first run (append)")
    parser.add_argument("--step-s", type=int, default=None, help="seconds between runs")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    make_fleet(args.out, args.runs, args.seed, first=args.first, step_s=args.step_s)
    elapsed = time.perf_counter() - started
    print(f"fleet: {args.runs} runs in {args.out} ({elapsed:.1f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
