"""What judging gates costs `bench catalog build`: the catalog stage judges each
run dir it reads once (`catalog.verdicts.Judge`), reading each machine's records once.

    python tools/perf/verdicts.py [--store DIR] [--rounds 3]

DIR is a store with a synthetic fleet (default /tmp/bl-perf-100k/store, as tools/perf/
catalog.py leaves it; any store with run dirs will do). Prints, medians of --rounds: the time
to index every machine's records (`GateBook`), to judge every ok run (the verdict, its
detail and the public-shape check) and to add the verdict to each run's shard line, in total
and per run; how many runs passed, failed and could not be checked; and the peak RSS.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from pathlib import Path


def measure(store_root: Path) -> tuple[float, float, int, Counter[str]]:
    """(seconds indexing, seconds judging and rewriting lines, runs judged, verdicts)."""
    import orjson

    from benchlab.catalog.format import encode_line
    from benchlab.catalog.verdicts import Judge
    from benchlab.layout import Store

    store = Store(store_root)
    judge = Judge(store)
    machines = sorted(p.name for p in store.by_machine.iterdir() if p.is_dir())
    start = time.perf_counter()
    books = {m: judge._book(m) for m in machines}
    indexed = time.perf_counter() - start
    seen: Counter[str] = Counter()
    runs = 0
    start = time.perf_counter()
    for machine, book in books.items():
        for run_id in book.records:
            line = encode_line({"run_id": run_id, "machine_id": machine, "status": "ok"})
            out = judge.line(machine, line, None)
            seen[orjson.loads(out).get("gate") or "none"] += 1
            runs += 1
    judged = time.perf_counter() - start
    return indexed, judged, runs, seen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, default=Path("/tmp/bl-perf-100k/store"))
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    if not (args.store / "runs" / "by-machine").is_dir():
        print(f"{args.store}: no runs/by-machine (make a fleet with tools/perf/catalog.py)")
        return 2
    results = [measure(args.store) for _ in range(args.rounds)]
    indexed = statistics.median(r[0] for r in results)
    judged = statistics.median(r[1] for r in results)
    runs, seen = results[0][2], results[0][3]
    counts = ", ".join(f"{k} {v}" for k, v in sorted(seen.items()))
    print(f"runs judged:              {runs}  ({counts})")
    print(f"index records (GateBook): {indexed:.2f} s median of {len(results)}")
    per_run = judged / max(runs, 1) * 1e6
    print(f"judge + rewrite lines:    {judged:.2f} s median, {per_run:.0f} us per run")
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(f"peak RSS of this process: {peak:.1f} MiB (every machine's records held at once)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
