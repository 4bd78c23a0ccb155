"""Per-point dispatch cost of the ssh transport: persistent connection vs connect per point.

Starts one sshd on loopback (the test fleet's loopback mode: own host key, test user,
known_hosts), runs the agent's `clock` verb N times over one persistent SshTransport, then N
times with a fresh connection per call (the baseline), and the same verb as a local child
process (what the agent itself costs, with no ssh at all). Target: persistent median
<= 50 ms. Everything it starts is stopped and removed on exit.

    python tools/perf/ssh_dispatch.py [-n 30]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "fleet"))  # the fleet's sshd recipe, shared with tests

from fleet_hosts import Fleet  # noqa: E402

from benchlab.devices.bundle import agent_zipapp  # noqa: E402
from benchlab.devices.ssh import SshTransport  # noqa: E402
from benchlab.models import DeviceConfig  # noqa: E402

TARGET_MS = 50.0


def timed(samples: int, once: Callable[[], object]) -> list[float]:
    out = []
    for _ in range(samples):
        started = time.perf_counter()
        once()
        out.append((time.perf_counter() - started) * 1000)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--samples", type=int, default=30)
    args = parser.parse_args(argv)
    samples = max(30, args.samples)
    fleet = Fleet(1, force_loopback=True)
    try:
        fleet.start()
        config = DeviceConfig(**fleet.device("h0"))
        local, _ = agent_zipapp()

        def local_clock() -> None:
            argv = ["/usr/bin/python3", str(local), "clock"]
            subprocess.run(argv, capture_output=True, check=True)

        persistent = SshTransport("h0", config)
        for _ in range(3):  # connect, push the agent, warm caches
            persistent.call("clock", timeout=30)
        warm = timed(samples, lambda: persistent.call("clock", timeout=30))
        assert persistent.connects == 1, persistent.connects
        persistent.close()

        def fresh() -> None:
            with SshTransport("h0", config) as device:
                device.call("clock", timeout=30)

        cold = timed(samples, fresh)
        agent_only = timed(samples, local_clock)
    finally:
        fleet.close()
    warm_ms, cold_ms, local_ms = (statistics.median(x) for x in (warm, cold, agent_only))
    print(f"samples per mode:                   {samples}")
    print(f"persistent connection, median:      {warm_ms:7.1f} ms per point")
    print(f"connect per point (baseline), med.: {cold_ms:7.1f} ms per point")
    print(f"ratio baseline / persistent:        {cold_ms / warm_ms:7.2f} x")
    print(f"agent alone (local child), median:  {local_ms:7.1f} ms")
    print(f"ssh overhead over the agent alone:  {warm_ms - local_ms:7.1f} ms")
    verdict = "meets" if warm_ms <= TARGET_MS else "MISSES"
    print(f"target persistent <= {TARGET_MS:.0f} ms: {verdict}")
    return 0 if warm_ms <= TARGET_MS else 1


if __name__ == "__main__":
    raise SystemExit(main())
