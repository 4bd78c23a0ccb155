"""How fast does `bench` answer on a 100,000-run catalog? Prints medians of real processes.

    python tools/perf/query.py                       # 100,000 runs, 7 timed runs per command
    python tools/perf/query.py --runs 20000 --repeat 5 --loaders
    python tools/perf/query.py --work /tmp/q --only best "list --limit 20"   # keep the store

Target (issue 2): `bench best --model X` and `bench list --model X --limit 20` <= 1.0 s wall,
interpreter start included. `list --format json` prints every matching entry in full (a
quarter of the catalog here), which is bounded by the output, not by the query.

The catalog is made the way a user's is: `tools/perf/make_fleet.py` writes `--seed-runs` real
run dirs and `bench catalog build` turns them into catalog.json. Writing and building 100,000
run dirs takes many minutes, so by default those built entries are then repeated, with new run
ids, timestamps and jittered metrics, up to `--runs`, and the document is finished by
`catalog.merge_catalogs` (the same index, machines and bytes a build writes). `--full-fleet`
builds all `--runs` dirs instead. `--loaders` also times, in-process, the ways to read the file:
json.loads, orjson.loads, load_catalog (orjson plus the field check), and pydantic's
Catalog.model_validate_json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
MODEL = "smollm2-135m"
COMMANDS = (
    ("best", ["best", "--model", MODEL]),
    ("best --by machine", ["best", "--model", MODEL, "--by", "machine"]),
    ("best --by series", ["best", "--model", MODEL, "--by", "series"]),
    ("best --precision q4 --threads 4", ["best", "--precision", "q4", "--threads", "4"]),
    ("list --limit 20", ["list", "--model", MODEL, "--limit", "20"]),
    ("table", ["table", "--model", MODEL]),
    ("list --format json", ["list", "--model", MODEL, "--format", "json"]),
    ("summary", ["summary", "--group-by", "machine"]),
)
TARGETS = {"best": 1.0, "list --limit 20": 1.0}


def _bench_argv() -> list[str]:
    found = shutil.which("bench")
    return [found] if found else [sys.executable, "-m", "benchlab"]


def _run(argv: list[str], env: dict[str, str], timeout: float = 600) -> None:
    subprocess.run(argv, env=env, check=True, timeout=timeout, stdout=subprocess.DEVNULL)


def build_catalog(store: Path, runs: int, seed_runs: int, full_fleet: bool, seed: int) -> Path:
    env = {**os.environ, "BENCHLAB_STORE": str(store)}
    made = runs if full_fleet else min(seed_runs, runs)
    started = time.perf_counter()
    _run(
        [sys.executable, str(HERE / "make_fleet.py"), "--runs", str(made), "--out", str(store)],
        env,
        timeout=3600,
    )
    _run([*_bench_argv(), "catalog", "build"], env, timeout=3600)
    print(
        f"fleet of {made} run dirs built into catalog.json in {time.perf_counter() - started:.1f} s"
    )
    path = store / "catalog.json"
    if made < runs:
        started = time.perf_counter()
        _replicate(path, runs, seed)
        print(f"repeated to {runs} entries in {time.perf_counter() - started:.1f} s")
    return path


def _replicate(path: Path, runs: int, seed: int) -> None:
    """Grow a built catalog to `runs` entries: same shape, new ids, times and metrics."""
    from benchlab.catalog.merge import merge_catalogs
    from benchlab.catalog.text import catalog_text

    doc = json.loads(path.read_text())
    built = doc["runs"]
    rng = random.Random(seed)
    start = datetime(2025, 1, 6, tzinfo=timezone.utc)
    grown = []
    for i in range(runs):
        entry = json.loads(json.dumps(built[i % len(built)]))
        moment = start + timedelta(seconds=157 * i)
        stamp = moment.strftime("%Y%m%dT%H%M%SZ")
        spec = entry["run_id"].rsplit("-", 1)[0]
        entry["run_id"] = f"{spec}-{stamp}"
        entry["timestamp"] = moment.strftime("%Y-%m-%dT%H:%M:%SZ")
        entry["path"] = f"runs/by-machine/{entry['machine_id']}/{entry['run_id']}/"
        factor = rng.uniform(0.9, 1.1)
        for key in (
            "peak_tok_per_sec",
            "baseline_tok_per_sec",
            "prefill_tok_per_sec",
            "decode_tok_per_sec",
        ):
            if entry.get(key) is not None:
                entry[key] = round(entry[key] * factor, 2)
        for point in entry.get("batch_curve") or []:
            point["agg_tok_per_sec"] = round(point["agg_tok_per_sec"] * factor, 2)
        grown.append(entry)
    doc["runs"] = grown
    path.write_text(catalog_text(merge_catalogs(doc)))


def _timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one `bench` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    _run(argv, env)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def time_commands(
    store: Path, repeat: int, only: list[str] | None = None
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Warm runs (the query cache current), interleaved so a busy moment hits all alike.

    `only`: the labels to time (an older benchlab lacks some verbs' flags)."""
    env = {**os.environ, "BENCHLAB_STORE": str(store)}
    commands = [(label, argv) for label, argv in COMMANDS if not only or label in only]
    walls: dict[str, list[float]] = {label: [] for label, _ in commands}
    cpus: dict[str, list[float]] = {label: [] for label, _ in commands}
    for _label, argv in commands:
        _run([*_bench_argv(), *argv], env)  # warm the page cache and the query cache, untimed
    for _ in range(repeat):
        for label, argv in commands:
            wall, cpu = _timed([*_bench_argv(), *argv], env)
            walls[label].append(wall)
            cpus[label].append(cpu)
    return walls, cpus


def time_cold(store: Path, repeat: int) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """`bench best` right after catalog.json changed: it parses, checks and writes the cache."""
    from benchlab.layout import Store

    env = {**os.environ, "BENCHLAB_STORE": str(store)}
    cache = Store(store).query_cache
    label = "best (cold: no query cache)"
    walls: dict[str, list[float]] = {label: []}
    cpus: dict[str, list[float]] = {label: []}
    for _ in range(repeat):
        cache.unlink(missing_ok=True)
        wall, cpu = _timed([*_bench_argv(), *COMMANDS[0][1]], env)
        walls[label].append(wall)
        cpus[label].append(cpu)
    return walls, cpus


def time_loaders(path: Path, repeat: int) -> dict[str, list[float]]:
    """Each way to read the catalog, cycle collector paused for all (as load_catalog does)."""
    import gc

    import orjson

    from benchlab.catalog.read import load_catalog
    from benchlab.layout import Store
    from benchlab.models import Catalog
    from benchlab.query.filters import Filters, select

    raw = path.read_bytes()
    cache = Store(path.parent).query_cache
    load_catalog(path, cache=cache)  # make sure the cache is current
    rows = select(load_catalog(path).runs, Filters(model=MODEL))
    loaders: dict[str, Callable[[], Any]] = {
        "json.loads": lambda: json.loads(raw),
        "orjson.loads": lambda: orjson.loads(raw),
        "load_catalog, no cache (orjson+check)": lambda: load_catalog(path),
        "load_catalog, cache current (marshal)": lambda: load_catalog(path, cache=cache),
        "Catalog.model_validate_json (pydantic)": lambda: Catalog.model_validate_json(raw),
        f"json.dumps {len(rows)} rows, indent 2": lambda: json.dumps(
            rows, indent=2, sort_keys=True
        ),
        f"orjson.dumps {len(rows)} rows, indent 2": lambda: orjson.dumps(
            rows, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS
        ),
    }
    timings: dict[str, list[float]] = {}
    for label, load in loaders.items():
        timings[label] = []
        for _ in range(repeat):
            gc.disable()
            started = time.perf_counter()
            result = load()
            timings[label].append(time.perf_counter() - started)
            gc.enable()
            del result
    return timings


def report(title: str, walls: dict[str, list[float]], cpus: dict[str, list[float]]) -> None:
    print(title)
    for label, values in walls.items():
        median = statistics.median(values)
        target = TARGETS.get(label)
        verdict = ""
        if target is not None:
            verdict = f"  target <= {target:.1f} s: " + ("met" if median <= target else "MISSED")
        cpu = f"  cpu median {statistics.median(cpus[label]):6.3f} s" if label in cpus else ""
        print(
            f"  {label:40s} wall median {median:6.3f} s  min {min(values):6.3f}  "
            f"max {max(values):6.3f}{cpu}  (n={len(values)}){verdict}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--seed-runs", type=int, default=2_000, help="run dirs really built")
    parser.add_argument("--full-fleet", action="store_true", help="build all --runs run dirs")
    parser.add_argument("--repeat", type=int, default=7, help="timed runs per command (>= 5)")
    parser.add_argument("--cold", type=int, default=3, help="timed runs without the cache")
    parser.add_argument("--loaders", action="store_true", help="also time the loaders in-process")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", type=Path, help="keep the store here (default: a temp dir)")
    parser.add_argument(
        "--only",
        nargs="+",
        metavar="LABEL",
        help=f"time only these commands, by label: {'; '.join(label for label, _ in COMMANDS)}",
    )
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="benchlab-perf-query-"))
    try:
        store = work / "experiments" / "benchmark"
        path = store / "catalog.json"
        if not path.is_file():
            store.mkdir(parents=True, exist_ok=True)
            build_catalog(store, args.runs, args.seed_runs, args.full_fleet, args.seed)
        entries = len(json.loads(path.read_bytes())["runs"])
        size_mb = path.stat().st_size / 1e6
        print(f"catalog: {entries} runs, {size_mb:.1f} MB ({path})")
        print(
            f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, load average "
            f"{os.getloadavg()[0]:.2f} (a busy box inflates wall time; cpu time much less)"
        )
        report(
            "bench, one process each (interpreter start included):",
            *time_commands(store, max(args.repeat, 1), args.only),
        )
        report("bench after catalog.json changed:", *time_cold(store, max(args.cold, 1)))
        if args.loaders:
            report("loading catalog.json in-process:", time_loaders(path, 3), {})
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
