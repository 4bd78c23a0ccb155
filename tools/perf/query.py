"""How fast does `bench` answer on a large catalog? Prints medians of real processes.

    python tools/perf/query.py                       # 100,000 runs, 7 timed runs per command
    python tools/perf/query.py --runs 1000000 --only best "best --by machine" table \
        "table (all models)" --cold 2 --work /tmp/q1m           # a million runs, kept
    python tools/perf/query.py --runs 20000 --repeat 5 --python-path

Targets: `bench best` and `bench table` <= 1.0 s wall, interpreter start included, and peak
RSS <= 2 GB, at 100,000 and 1,000,000 runs; `bench list --limit 20`
<= 1.0 s at 100,000. `list --format json` prints every matching entry in full (a quarter
of the catalog here), which is bounded by the output, not by the query.

`best` and `table` on a catalog of `query.colcache.MIN_BYTES` or more are answered by the
columnar query cache (query/colcache/); `--python-path` also times every command with
BENCHLAB_QUERY_COLUMNS=never (the loaded catalog, as before the cache). Printed too: the
cold build of the columns cache (`bench best` right after the cache is deleted) and the
rebuild after two shards changed (as after an incremental `bench catalog build`).
Peak RSS is the child's ru_maxrss (os.wait4).

The catalog is made the way a user's is: `tools/perf/make_fleet.py` writes `--seed-runs` real
run dirs and `bench catalog build` turns them into a v3 catalog (the only format `bench`
reads). Writing and building a million run dirs takes hours, so by default those built
entries are then repeated, with new run ids, timestamps and jittered metrics, up to `--runs`,
streamed into shards by machine and ISO week as `shards.shard_name` places them (a million
runs in about 45 s). `--full-fleet` builds all `--runs` dirs instead.

Where PYTHONDONTWRITEBYTECODE is set (as in some sandboxes) every process compiles
benchlab's modules from source, ~0.1 s more than an installed benchlab pays; `--bytecode`
unsets it for the timed processes.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
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
    ("table (all models)", ["table"]),
    ("list --format json", ["list", "--model", MODEL, "--format", "json"]),
    ("summary", ["summary", "--group-by", "machine"]),
)
TARGETS = {"best": 1.0, "table": 1.0, "table (all models)": 1.0, "list --limit 20": 1.0}
RSS_TARGET_MB = 2000
COLUMNS_ENV = "BENCHLAB_QUERY_COLUMNS"


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
        f"fleet of {made} run dirs built into a v3 catalog in {time.perf_counter() - started:.1f} s"
    )
    path = store / "catalog.json"
    if made < runs:
        started = time.perf_counter()
        _replicate_v3(path, runs, seed)
        print(f"repeated to {runs} entries in {time.perf_counter() - started:.1f} s")
    return path


SPAN_S = 157 * 100_000
"""The replicated runs span about six months (157 s apart at 100,000 runs, 15 s at a million),
as a fleet of 7 machines sweeping nightly would: ~8,000 runs per machine and ISO week at 1M."""

_REPLICATED_METRICS = (
    "peak_tok_per_sec",
    "baseline_tok_per_sec",
    "prefill_tok_per_sec",
    "decode_tok_per_sec",
)


def _replicated(built: list[dict[str, Any]], runs: int, seed: int) -> Iterator[dict[str, Any]]:
    """`runs` entries shaped like `built`, in time order: new ids, times and metrics."""
    rng = random.Random(seed)
    start = datetime(2025, 1, 6, tzinfo=timezone.utc)
    step = max(1, SPAN_S // runs)
    for i in range(runs):
        source = built[i % len(built)]
        entry = dict(source)
        moment = start + timedelta(seconds=step * i)
        stamp = moment.strftime("%Y%m%dT%H%M%SZ")
        spec = entry["run_id"].rsplit("-", 1)[0]
        entry["run_id"] = f"{spec}-{stamp}"
        entry["timestamp"] = moment.strftime("%Y-%m-%dT%H:%M:%SZ")
        entry["path"] = f"runs/by-machine/{entry['machine_id']}/{entry['run_id']}/"
        factor = rng.uniform(0.9, 1.1)
        for key in _REPLICATED_METRICS:
            if entry.get(key) is not None:
                entry[key] = round(entry[key] * factor, 2)
        curve = source.get("batch_curve")
        if curve:
            entry["batch_curve"] = [
                {"agg_tok_per_sec": round(p["agg_tok_per_sec"] * factor, 2), "batch": p["batch"]}
                for p in curve
            ]
        yield entry


def _replicate_v3(path: Path, runs: int, seed: int) -> None:
    """Grow a built v3 catalog to `runs` entries, written as a build writes them: one line per
    run in `catalog/<machine>/<ISO week>.<machine>.jsonl` (`shards.shard_name`), sorted by run id.

    Streamed: entries come in time order, so a week's shards are complete, written and
    dropped once the next week starts; a million runs never sit in memory together.
    """
    from benchlab.catalog.read import load_catalog
    from benchlab.catalog.shards import encode_line, period_of, shard_dir, shard_name

    built = load_catalog(path).runs
    shutil.rmtree(shard_dir(path))
    root = path.parent
    pending: dict[str, list[tuple[str, bytes]]] = {}
    week = None

    def flush() -> None:
        for name, lines in pending.items():
            target = root / name
            target.parent.mkdir(parents=True, exist_ok=True)
            lines.sort()
            target.write_bytes(b"".join(line + b"\n" for _, line in lines))
        pending.clear()

    for entry in _replicated(built, runs, seed):
        current = period_of(entry["timestamp"])
        if current != week:
            flush()
            week = current
        pending.setdefault(shard_name(entry), []).append((entry["run_id"], encode_line(entry)))
    flush()


def count_runs(path: Path) -> tuple[int, int]:
    """(runs, bytes) of a catalog: catalog.json's `runs` plus every shard's lines."""
    from benchlab.catalog.shards import iter_shards

    size = path.stat().st_size
    runs = len(json.loads(path.read_bytes()).get("runs", []))
    for _name, shard in iter_shards(path):
        data = shard.read_bytes()
        runs += data.count(b"\n")
        size += len(data)
    return runs, size


Sample = tuple[float, float, float]
"""(wall s, cpu s, peak RSS MB) of one process."""


def _timed(argv: list[str], env: dict[str, str]) -> Sample:
    """Wall and CPU seconds (user + system) and peak RSS of one `bench` process."""
    started = time.perf_counter()
    child = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(argv)}: exit status {child.returncode}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def _env(store: Path, bytecode: bool, **extra: str) -> dict[str, str]:
    env = {**os.environ, "BENCHLAB_STORE": str(store), **extra}
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def time_commands(
    store: Path, repeat: int, only: list[str] | None, env: dict[str, str]
) -> dict[str, list[Sample]]:
    """Warm runs (the caches current), interleaved so a busy moment hits all alike.

    `only`: the labels to time (an older benchlab lacks some verbs' flags)."""
    commands = [(label, argv) for label, argv in COMMANDS if not only or label in only]
    samples: dict[str, list[Sample]] = {label: [] for label, _ in commands}
    for _label, argv in commands:
        _run([*_bench_argv(), *argv], env)  # warm the page cache and the caches, untimed
    for _ in range(repeat):
        for label, argv in commands:
            samples[label].append(_timed([*_bench_argv(), *argv], env))
    return samples


def _drop_columns_cache(store: Path) -> None:
    from benchlab.layout import Store
    from benchlab.query.colcache import CACHE_NAME, SEGMENT_DIR

    cache = Store(store).query_cache.parent
    (cache / CACHE_NAME).unlink(missing_ok=True)
    shutil.rmtree(cache / SEGMENT_DIR, ignore_errors=True)


def _touch_shards(path: Path, count: int) -> None:
    """Rewrite `count` shards whole with the same bytes (a new inode and mtime), as an
    incremental `bench catalog build` that added a run to each would."""
    from benchlab.catalog.shards import iter_shards

    shards = [shard for _, shard in iter_shards(path)]
    for shard in shards[len(shards) // 2 : len(shards) // 2 + count]:
        tmp = shard.with_name(shard.name + ".tmp")
        tmp.write_bytes(shard.read_bytes())
        os.replace(tmp, shard)


def time_cold(
    store: Path, repeat: int, env: dict[str, str], python_path: bool
) -> dict[str, list[Sample]]:
    """`bench best` with no columns cache (it reads every shard and builds it), after two
    shards changed (it reads those two and recombines), and with --python-path the Python
    path right after catalog.json changed (it parses, checks and writes its marshal cache)."""
    from benchlab.layout import Store

    best = [*_bench_argv(), *COMMANDS[0][1]]
    samples: dict[str, list[Sample]] = {
        "best, no columns cache (cold build)": [],
        "best after 2 shards changed": [],
    }
    for _ in range(repeat):
        _drop_columns_cache(store)
        samples["best, no columns cache (cold build)"].append(_timed(best, env))
    for _ in range(repeat):
        _touch_shards(store / "catalog.json", 2)
        samples["best after 2 shards changed"].append(_timed(best, env))
    if python_path:
        label = "best, Python path, no marshal cache"
        samples[label] = []
        for _ in range(repeat):
            Store(store).query_cache.unlink(missing_ok=True)
            samples[label].append(_timed(best, {**env, COLUMNS_ENV: "never"}))
    return samples


def report(title: str, samples: dict[str, list[Sample]]) -> None:
    print(title)
    for label, values in samples.items():
        if not values:
            continue
        walls = [wall for wall, _, _ in values]
        median = statistics.median(walls)
        rss = max(peak for _, _, peak in values)
        verdict = ""
        target = TARGETS.get(label)
        if target is not None:
            verdict = f"  target <= {target:.1f} s: " + ("met" if median <= target else "MISSED")
        verdict += "" if rss <= RSS_TARGET_MB else f"  RSS over {RSS_TARGET_MB} MB"
        print(
            f"  {label:38s} wall median {median:6.3f} s  min {min(walls):6.3f}  "
            f"max {max(walls):6.3f}  cpu median {statistics.median(c for _, c, _ in values):6.3f}"
            f" s  peak RSS {rss:6.0f} MB  (n={len(values)}){verdict}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--seed-runs", type=int, default=2_000, help="run dirs really built")
    parser.add_argument("--full-fleet", action="store_true", help="build all --runs run dirs")
    parser.add_argument("--repeat", type=int, default=7, help="timed runs per command (>= 5)")
    parser.add_argument("--cold", type=int, default=3, help="timed cache rebuilds of each kind")
    parser.add_argument(
        "--python-path", action="store_true", help="also time BENCHLAB_QUERY_COLUMNS=never"
    )
    parser.add_argument(
        "--bytecode", action="store_true", help="unset PYTHONDONTWRITEBYTECODE for the timed runs"
    )
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
        runs, size = count_runs(path)
        print(f"catalog: {runs} runs, {size / 1e6:.1f} MB of catalog.json and shards ({path})")
        print(
            f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, load average "
            f"{os.getloadavg()[0]:.2f} (a busy box inflates wall time; cpu time much less)"
            + (
                "; PYTHONDONTWRITEBYTECODE is set: modules compile in every process"
                if os.environ.get("PYTHONDONTWRITEBYTECODE") and not args.bytecode
                else ""
            )
        )
        env = _env(store, args.bytecode)
        repeat = max(args.repeat, 1)
        report(
            "bench, one process each (interpreter start included):",
            time_commands(store, repeat, args.only, env),
        )
        if args.python_path:
            report(
                f"bench with {COLUMNS_ENV}=never (the loaded catalog):",
                time_commands(store, repeat, args.only, {**env, COLUMNS_ENV: "never"}),
            )
        if args.cold > 0:
            report(
                "bench after the catalog changed:",
                time_cold(store, args.cold, env, args.python_path),
            )
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
