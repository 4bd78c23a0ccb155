#!/usr/bin/env python3
"""How good is `bench best --predict`? Leave-one-out on a fleet of published results.

The prediction (ARCHITECTURE.md, "How close to the hardware") is a machine's ceiling
(bandwidth / bytes per token) times the median MBU of the other machines. This hides each
machine of a fleet in turn, predicts its decode from the others with the same arithmetic
(`benchlab.machines.roofline.predict`), and prints each prediction, its error, whether the
fleet's interval held the real figure, and the median absolute percentage error (MdAPE).

The fleet is real, published llama.cpp decode (tg128) results on 7B 4-bit models:
- RTX 3090 Ti (llama 7B Q4_0, build b1275) and RTX 4080 (qwen2 7B Q4_K_M, build b5163):
  llama-bench's own README outputs, tests/data/llama_bench/, imported here with `bench
  migrate` into a scratch store and judged by `bench table --format json` against the
  cards' spec-sheet bandwidths, as a user's import would be;
- Apple M2 Ultra and M1 (llama 7B Q4_0): llama.cpp's Apple-silicon scoreboard (discussion
  #4167) as tests/onboard/test_roofline.py quotes it, with Apple's bandwidths.
MBU is compared across models here (bytes per token differ by model): what a prediction
for a model a machine never ran has to assume anyway.

Usage: python tools/perf/predict.py [--gpus-only]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchlab.cli import main as bench
from benchlab.machines.roofline import bytes_per_token, ceiling, mbu_pct, predict

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "llama_bench"
README_RESULTS = {"rtx3090ti": "b1275-cuda-2023-09.json", "rtx4080": "b5163-cuda-2025-04.json"}
LLAMA_7B_Q4_0 = 3_825_065_984
SCOREBOARD = {  # machine: (GB/s, decode t/s, model_size bytes)
    "m2-ultra": (800.0, 94.27, LLAMA_7B_Q4_0),
    "m1": (68.25, 14.15, LLAMA_7B_Q4_0),
}


def _bench(*argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = bench(list(argv))
    if code != 0:
        raise SystemExit(f"bench {' '.join(argv)}: exit {code}")
    return out.getvalue()


def readme_fleet() -> dict[str, tuple[float, float, float]]:
    """(GB/s, decode t/s, bytes per token) of each README result, through the real import."""
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "repo" / "experiments" / "benchmark"
        store.mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(store.parents[1])], check=True)
        os.environ["BENCHLAB_STORE"] = str(store)
        for machine, name in README_RESULTS.items():
            _bench("migrate", str(DATA / name), "--machine-id", machine)
        _bench("catalog", "build")
        rows = json.loads(_bench("table", "--format", "json"))
        machines = json.loads(_bench("machines", "--format", "json"))
    gbs = {m["machine"]: m["gpu_mem_bandwidth"]["gbs"] for m in machines}
    out = {}
    for row in rows:
        machine, decode = row["machine_id"], row["decode_tok_per_sec"]
        per_token = bytes_per_token(row["model_size"], model=row["model"])
        assert per_token is not None
        # The table's MBU is this arithmetic, to 0.1.
        assert abs(mbu_pct(decode, per_token, gbs[machine]) - row["mbu_pct"]) <= 0.05
        out[machine] = (gbs[machine], decode, per_token)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus-only", action="store_true", help="the two README GPUs alone")
    args = parser.parse_args()
    fleet = readme_fleet()
    if not args.gpus_only:
        fleet.update({m: (gbs, t, float(size)) for m, (gbs, t, size) in SCOREBOARD.items()})
    shares = {m: mbu_pct(t, b, gbs) for m, (gbs, t, b) in fleet.items()}
    print(f"{'machine':<10} {'GB/s':>7} {'decode':>8} {'MBU %':>6} {'predicted':>10} "
          f"{'interval':>17} {'error':>7}")  # fmt: skip
    errors = []
    held = 0
    for machine, (gbs, decode, per_token) in fleet.items():
        others = [share for m, share in shares.items() if m != machine]
        top = ceiling(gbs, per_token)
        found = predict(top, others)
        if found is None:  # one other machine: its MBU alone (no spread to give)
            guess, low, high = top * others[0] / 100, None, None
        else:
            guess, low, high = found.tok_per_sec, found.low, found.high
        error = (guess - decode) / decode * 100
        errors.append(abs(error))
        held += low is not None and high is not None and low <= decode <= high
        interval = f"{low:7.1f}..{high:7.1f}" if low is not None and high is not None else "-"
        print(f"{machine:<10} {gbs:7.1f} {decode:8.2f} {shares[machine]:6.1f} {guess:10.1f} "
              f"{interval:>17} {error:+6.0f}%")  # fmt: skip
    print(
        f"fleet: {len(fleet)} machines; MBU {min(shares.values()):.1f}..{max(shares.values()):.1f}%"
    )
    if not args.gpus_only:
        print(f"the fleet's interval held the real figure: {held} of {len(fleet)}")
    print(f"median absolute percentage error: {statistics.median(errors):.0f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
