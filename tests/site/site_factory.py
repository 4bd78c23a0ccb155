"""A small public store built straight from the models: three machines, four models (one
named like an XSS probe), batch curves, a regression that came with a new backend build,
failures and a hole. `thread_runs()` adds a series that differs from another only in its
thread count."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from tests.kit.catalog import write_v3_catalog

from benchlab.layout import Store, write_model
from benchlab.models import (
    BatchCurvePoint,
    Catalog,
    CatalogEntry,
    CpuSpec,
    GpuSpec,
    HardwareSpec,
    InventoryEntry,
    MachineInventory,
    MachineSpecs,
    MachineSummary,
    OsSpec,
)

XSS_MODEL = "<script>alert(1)</script>"
MACHINES = {"gpu-box": 40.0, "laptop": 8.0, "pi5": 1.0}
MODELS = [("SmolLM2-135M", "q8"), ("SmolLM2-135M", "f32"), ("Llama-3.2-1B", "q8")]
START = datetime(2025, 1, 6, 12, 0, 0, tzinfo=timezone.utc)


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def entry(machine: str, model: str, precision: str, day: int, rate: float, **extra) -> CatalogEntry:
    moment = START + timedelta(days=day, minutes=len(model) + len(precision))
    stamp = moment.strftime("%Y%m%dT%H%M%SZ")
    model_id = "xss-probe" if model == XSS_MODEL else model.lower()
    curve = [BatchCurvePoint(batch=b, agg_tok_per_sec=rate * b**0.7) for b in (1, 2, 4, 8)]
    fields = {
        "run_id": f"{machine}-{model_id}-{precision}-batch-0000abcd-{stamp}",
        "machine_id": machine,
        "timestamp": _stamp(moment),
        "model": model,
        "model_id": model_id,
        "precision": precision,
        "mode": "batch",
        "backend": "reference",
        "tags": ["batch"],
        "peak_tok_per_sec": round(rate * 8**0.7, 3),
        "baseline_tok_per_sec": rate,
        "speedup": round(8**0.7, 3),
        "prefill_tok_per_sec": rate * 10,
        "decode_tok_per_sec": rate,
        "batch_curve": curve,
        "threads": 4,
        "prompt_tokens": 32,
        "gen_tokens": 16,
        "backend_version": "benchlab 0.1.0",
    }
    fields.update(extra)
    return CatalogEntry(**fields)


def runs() -> list[CatalogEntry]:
    out = []
    for machine, speed in MACHINES.items():
        for model, precision in MODELS:
            base = speed * (2.0 if precision == "q8" else 1.0) * (3.0 if "135M" in model else 1.0)
            for day in range(12):
                rate = base * (1.0 + 0.01 * (day % 3))
                extra = {}
                if machine == "laptop" and model == "Llama-3.2-1B" and day >= 7:
                    rate = base * 0.5  # a regression from day 7 on, with a new build
                    extra["backend_version"] = "benchlab 0.2.0"
                out.append(entry(machine, model, precision, day, rate, **extra))
    out.append(entry("laptop", XSS_MODEL, "q8", 3, 5.0))
    out.append(
        entry(
            "pi5", "Llama-3.2-1B", "f32", 13, 0.1, status="failed", failure_kind="measurement",
            peak_tok_per_sec=None, decode_tok_per_sec=None, prefill_tok_per_sec=None,
            batch_curve=None, error="did not fit in memory",
        )
    )  # fmt: skip
    out.append(
        entry(
            "pi5", "SmolLM2-135M", "q4", 13, 0.1, status="failed", failure_kind="transport",
            peak_tok_per_sec=None, decode_tok_per_sec=None, prefill_tok_per_sec=None,
            batch_curve=None, tags=["batch", "hole"],  # how `bench catalog build` marks a hole
        )
    )  # fmt: skip
    return sorted(out, key=lambda r: r.run_id)


def thread_runs() -> list[CatalogEntry]:
    """gpu-box's SmolLM2-135M q8 again at one thread: the same measurement in every field
    but `threads`, so a series of its own (its run ids differ in the spec hash)."""
    out = []
    for day in range(12):
        run = entry("gpu-box", "SmolLM2-135M", "q8", day, 30.0, threads=1)
        out.append(run.model_copy(update={"run_id": run.run_id.replace("0000abcd", "0000t1t1")}))
    return out


def write_store(root: Path, extra: list[CatalogEntry] | None = None) -> Store:
    """Write catalog.json, machines/catalog.json and public specs into `root`."""
    store = Store(root)
    entries = sorted([*runs(), *(extra or [])], key=lambda r: r.run_id)
    summaries = {}
    for machine in MACHINES:
        mine = [r for r in entries if r.machine_id == machine]
        summaries[machine] = MachineSummary(
            id=machine,
            os="Linux",
            arch="x86_64" if machine != "pi5" else "aarch64",
            runs=len(mine),
            last_run=max(r.timestamp for r in mine),
        )
    catalog = Catalog(
        last_updated=max(r.timestamp for r in entries),
        machines=summaries,
        runs=entries,
    )
    write_v3_catalog(root, catalog.runs, catalog.machines)
    inventory = MachineInventory(
        machines={
            "gpu-box": InventoryEntry(id="gpu-box", os="Ubuntu 22.04", gpu="NVIDIA L4",
                                      cost_per_hour=0.8, cpu_model="AMD EPYC", ram_gb=64),
            "laptop": InventoryEntry(id="laptop", os="macOS 14", cpu_model="Apple M3 Pro"),
            "pi5": InventoryEntry(id="pi5", os="Debian 12", cpu_model="Cortex-A76", ram_gb=8),
        }
    )  # fmt: skip
    write_model(store.inventory_path, inventory)
    write_model(
        store.public_specs("laptop"),
        MachineSpecs(
            machine_id="laptop",
            registered_at="2025-01-01T00:00:00Z",
            hardware=HardwareSpec(
                cpu=CpuSpec(model="Apple M3 Pro", cores_physical=12),
                gpu=[GpuSpec(model="Apple M3 Pro", memory_gb=36)],
                ram_gb=36,
            ),
            os=OsSpec(name="macOS", version="14.5"),
            cost_per_hour=0.25,
        ),
    )
    return store


FLEET_MACHINES = {
    "gpu-box": 40.0,
    "laptop": 8.0,
    "mac": 12.0,
    "nuc": 5.0,
    "pi5": 1.0,
    "jetson": 3.0,
}
FLEET_MODELS = ("SmolLM2-135M", "Llama-3.2-1B")
FLEET_PRECISIONS = ("q4", "q8")
FLEET_DAYS = 60
STEP_DAY = 50
"""pi5's q4 runs drop 28 % from this day on: 5 runs of each of its two q4 series, 10 in all."""


def fleet_runs(seed: int = 7) -> list[CatalogEntry]:
    """A generated fleet: six machines, two models, two precisions, a run of each series
    every other day for 60 days with +-10 % uniform noise, the laptop at 1, 2 and 4 threads
    (decode and batch throughput grow with threads), decode stddevs, and one planted step:
    pi5's q4 runs lose 28 % from day 50 on (the newest run is day 58: inside the 14-day
    window)."""
    import random

    rng = random.Random(seed)
    out = []
    for machine, speed in FLEET_MACHINES.items():
        for model in FLEET_MODELS:
            for precision in FLEET_PRECISIONS:
                for threads in (1, 2, 4) if machine == "laptop" else (4,):
                    base = speed * (1.6 if precision == "q4" else 1.0)
                    base *= (3.0 if "135M" in model else 1.0) * (threads / 4) ** 0.6
                    for day in range(0, FLEET_DAYS, 2):
                        rate = base * rng.uniform(0.9, 1.1)
                        if machine == "pi5" and precision == "q4" and day >= STEP_DAY:
                            rate *= 0.72
                        run = entry(
                            machine, model, precision, day, rate, threads=threads,
                            decode_stddev=round(rate * 0.04, 4),
                            prefill_stddev=round(rate * 0.3, 4),
                            tests=["pp32", "tg16"], attempt=1, attempts=3,
                            warnings=1 if day % 20 == 0 else 0,
                        )  # fmt: skip
                        run_id = run.run_id.replace("0000abcd", f"0000t{threads:03d}")
                        out.append(run.model_copy(update={"run_id": run_id}))
    return sorted(out, key=lambda r: r.run_id)


def write_fleet(root: Path) -> Store:
    """The generated fleet as a public store (catalog.json and the inventory)."""
    store = Store(root)
    entries = fleet_runs()
    summaries = {
        m: MachineSummary(
            id=m, os="Linux", arch="x86_64", runs=sum(r.machine_id == m for r in entries),
            last_run=max(r.timestamp for r in entries if r.machine_id == m),
        )
        for m in FLEET_MACHINES
    }  # fmt: skip
    catalog = Catalog(last_updated=max(r.timestamp for r in entries), machines=summaries,
                      runs=entries)  # fmt: skip
    write_v3_catalog(root, catalog.runs, catalog.machines)
    write_model(
        store.inventory_path,
        MachineInventory(machines={m: InventoryEntry(id=m, os="Linux") for m in FLEET_MACHINES}),
    )
    return store


def write_empty(root: Path) -> Store:
    """A store whose catalog holds no runs yet."""
    store = Store(root)
    write_v3_catalog(root, [])
    return store


def write_entries(root: Path, entries: list[CatalogEntry]) -> Store:
    """Any generated runs as a public store (catalog and a bare inventory of their machines)."""
    store = Store(root)
    machines = sorted({r.machine_id for r in entries})
    summaries = {
        m: MachineSummary(
            id=m, os="Linux", arch="x86_64", runs=sum(r.machine_id == m for r in entries),
            last_run=max(r.timestamp for r in entries if r.machine_id == m),
        )
        for m in machines
    }  # fmt: skip
    write_v3_catalog(root, sorted(entries, key=lambda r: r.run_id), summaries)
    write_model(
        store.inventory_path,
        MachineInventory(machines={m: InventoryEntry(id=m, os="Linux") for m in machines}),
    )
    return store


def demo_runs() -> list[CatalogEntry]:
    """The quick start's demo as `dvc repro` leaves it: the default sweep's 8 points (tiny and
    SmolLM2-135M, f32 and q8, 1 and 2 threads) on the machine `local`, one run each, all
    within a minute, each with a passed gate verdict (a line the demo never asked for)."""
    out = []
    point = 0
    for model, speed in (("tiny", 2000.0), ("SmolLM2-135M", 25.0)):
        for precision in ("f32", "q8"):
            for threads in (1, 2):
                run = entry("local", model, precision, 0, speed * threads**0.5, threads=threads,
                            gate="passed")  # fmt: skip
                moment = START + timedelta(seconds=7 * point)
                stamp = moment.strftime("%Y%m%dT%H%M%SZ")
                run_id = f"local-{run.model_id}-{precision}-batch-0000t{threads:03d}-{stamp}"
                out.append(run.model_copy(update={"run_id": run_id, "timestamp": _stamp(moment)}))
                point += 1
    return out
