#!/usr/bin/env python3
"""Prove the agent's budgets: start <= 150 ms, idle RSS <= 30 MB.

Builds the agent zipapp and runs `python agent.pyz clock` N times (default 15): the median
wall time from spawn to exit is the start-up cost a device pays per verb. Memory is read
from /proc (VmHWM, the process's own peak RSS): for an idle agent (`run` of a task that
sleeps, so the agent waits with its sampler thread live) while it runs, and for each short
verb at its exit (the zipapp run through runpy with an atexit hook). os.wait4's ru_maxrss is
not used: on Linux it counts the parent's memory copied before exec, so it overstates.
Prints medians and the verdict; exits 1 when a budget is missed.

Usage: python tools/perf/agent.py [--runs 15]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

START_BUDGET_MS = 150.0
RSS_BUDGET_MB = 30.0


PEAK_AT_EXIT = (
    "import atexit, runpy, sys\n"
    "def peak():\n"
    "    for line in open('/proc/self/status'):\n"
    "        if line.startswith('VmHWM'):\n"
    "            sys.stderr.write('PEAK ' + line.split()[1] + '\\n')\n"
    "atexit.register(peak)\n"
    "sys.argv = sys.argv[1:]\n"
    "runpy.run_path(sys.argv[0], run_name='__main__')\n"
)


def spawn(argv: list[str], stdin: str = "") -> float:
    """Wall ms from spawn to exit of one child."""
    t0 = time.perf_counter()
    done = subprocess.run(argv, input=stdin, capture_output=True, text=True, check=False)
    wall = (time.perf_counter() - t0) * 1e3
    if done.returncode != 0:
        raise SystemExit(f"{argv} exited {done.returncode}: {done.stderr[-300:]}")
    return wall


def peak_mb(python: str, pyz: Path, verb: str, stdin: str = "") -> float:
    """The verb's own peak RSS (VmHWM at exit), same interpreter, same code."""
    done = subprocess.run(
        [python, "-c", PEAK_AT_EXIT, str(pyz), verb],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
    )
    peaks = [line.split()[1] for line in done.stderr.splitlines() if line.startswith("PEAK ")]
    if not peaks:
        raise SystemExit(f"no peak reported for {verb}: {done.stderr[-300:]}")
    return int(peaks[-1]) / 1024.0


def proc_status_mb(pid: int) -> dict[str, float]:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0]) / 1024.0
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    from benchlab.devices.bundle import agent_zipapp

    with tempfile.TemporaryDirectory() as cache:
        pyz, sha = agent_zipapp(Path(cache))
        python = sys.executable
        print(f"agent zipapp {pyz.stat().st_size} bytes, sha256 {sha[:16]}; python {python}")
        spawn([python, str(pyz), "clock"])  # warm the page cache
        exists_payload = json.dumps({"kind": "binary", "name": "sh"})
        verbs = {
            "python -c pass (interpreter floor)": ([python, "-c", "pass"], "", None),
            "python agent.pyz clock": ([python, str(pyz), "clock"], "", "clock"),
            "python -m benchlab.agent clock": ([python, "-m", "benchlab.agent", "clock"], "", None),
            "python agent.pyz exists (binary)": (
                [python, str(pyz), "exists"],
                exists_payload,
                "exists",
            ),
            "python agent.pyz sysinfo": ([python, str(pyz), "sysinfo"], "", "sysinfo"),
        }
        results: dict[str, tuple[float, float | None]] = {}
        for name, (argv, stdin, verb) in verbs.items():
            runs = args.runs if verb != "sysinfo" else max(3, args.runs // 3)
            wall = statistics.median(spawn(argv, stdin) for _ in range(runs))
            peak = peak_mb(python, pyz, verb, stdin) if verb else None
            results[name] = (wall, peak)

        task = json.dumps({"argv": ["sleep", "1.5"], "sample_interval_s": 0.2})
        idle = subprocess.Popen(
            [python, str(pyz), "run"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert idle.stdin is not None
        idle.stdin.write(task)
        idle.stdin.close()
        time.sleep(1.0)
        idle_mem = proc_status_mb(idle.pid)
        assert idle.stdout is not None
        envelope = json.loads(idle.stdout.read())
        idle.wait(timeout=30)
        assert envelope["exit_code"] == 0

    print(f"start-up, median of {args.runs} spawns (spawn to exit), and the verb's own peak RSS:")
    for name, (wall, peak) in results.items():
        memory = f"peak RSS {peak:5.1f} MB" if peak is not None else ""
        print(f"  {name:<36} {wall:7.1f} ms   {memory}")
    clock_ms = results["python agent.pyz clock"][0]
    verb_peak = max(p for _, p in results.values() if p is not None)
    print(
        f"idle agent during `run` (sampler thread live): VmRSS {idle_mem['VmRSS']:.1f} MB, "
        f"VmHWM {idle_mem['VmHWM']:.1f} MB, {len(envelope['telemetry']['samples'])} samples"
    )
    ok_start = clock_ms <= START_BUDGET_MS
    worst = max(idle_mem["VmHWM"], verb_peak)
    ok_rss = worst <= RSS_BUDGET_MB
    print(
        f"start {clock_ms:.1f} ms <= {START_BUDGET_MS:.0f} ms: {'OK' if ok_start else 'MISSED'}; "
        f"agent RSS (idle or any verb) {worst:.1f} MB <= {RSS_BUDGET_MB:.0f} MB: "
        f"{'OK' if ok_rss else 'MISSED'}"
    )
    return 0 if ok_start and ok_rss else 1


if __name__ == "__main__":
    raise SystemExit(main())
