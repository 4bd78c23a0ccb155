"""A pulled catalog head with a huge `marks` (or `rejected`) list: how long until refused.

    python tools/perf/head_lists.py [--marks 300000] [--runs 8]

Builds a small store with the synthetic fleet (tools/perf/make_fleet.py), writes a head that
holds N well-formed marks (another clone's push), then times, each in a fresh `bench`
process: `bench mark-outlier RUN`, `bench catalog validate` and `bench list`. The gate
bounds the head's `marks` and `rejected` lists (ARCHITECTURE.md, The catalog: the trust
boundary) before anything expands them, so each is refused in a fraction of a second with
one line; before the bound, mark-outlier merged every mark first (9 s here at 300,000 marks
of 8 runs; 49 s was reported on another machine and payload). Prints one line per verb:
exit code, seconds, and the first line of stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "perf"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--marks", type=int, default=300_000)
    parser.add_argument("--runs", type=int, default=8)
    args = parser.parse_args()
    from make_fleet import make_fleet  # type: ignore[import-not-found]

    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"
        ids = make_fleet(store, args.runs, seed=3, step_s=3600)
        bench = [sys.executable, "-m", "benchlab", "--store", str(store)]
        subprocess.run([*bench, "catalog", "build"], env=env, check=True, capture_output=True)
        head_path = store / "catalog.json"
        head = json.loads(head_path.read_text())
        at = "2025-01-01T00:00:{:02d}Z"
        head["marks"] = [
            {"run_id": ids[i % len(ids)], "state": "marked", "at": at.format(i % 60)}
            for i in range(args.marks)
        ]
        head_path.write_text(json.dumps(head))
        print(f"head: {args.marks} marks, {head_path.stat().st_size / 1e6:.1f} MB")
        for verb in (["mark-outlier", ids[0]], ["catalog", "validate"], ["list"]):
            start = time.perf_counter()
            done = subprocess.run([*bench, *verb], env=env, capture_output=True, text=True)
            took = time.perf_counter() - start
            first = (done.stderr.strip().splitlines() or [""])[0][:110]
            print(f"{' '.join(verb[:2])[:24]:24} exit {done.returncode}  {took:6.2f} s  {first}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
