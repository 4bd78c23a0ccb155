"""Scrape a live `bench run --concurrent --prometheus-port` over HTTP on loopback."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from tests.kit.configs import write_sweep
from tests.kit.oracle import promtool_accepts

pytestmark = pytest.mark.integration

SLEEP_THEN_PRINT = "import time; time.sleep(0.6); print('{\"d\": {threads}5.0}')"
MATRIX = {
    "device": ["box-a", "box-b"],
    "backend": "command",
    "model": "tiny",
    "threads": [1, 2],
    "prompt_tokens": 8,
    "gen_tokens": 4,
    "params": {
        "argv": ["{python}", "-c", SLEEP_THEN_PRINT],
        "fields": {"decode": "d"},
    },
}
"""Four command points on two local devices, each sleeping long enough to be scraped."""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _scrape(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.read().decode()
    except (urllib.error.URLError, ConnectionError):
        return None


def test_metrics_of_a_running_sweep(store: Path, tmp_path: Path, prom_parse) -> None:
    config = write_sweep(
        tmp_path / "live.yaml",
        experiment="live",
        devices={name: {"transport": "local", "machine_id": name} for name in ("box-a", "box-b")},
        matrix=MATRIX,
    )
    port = _free_port()
    url = f"http://127.0.0.1:{port}/metrics"
    env = {**os.environ, "BENCHLAB_STORE": str(store)}
    sweep = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "benchlab",
            "run",
            str(config),
            "--concurrent",
            "--prometheus-port",
            str(port),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    mid_sweep = None
    most_in_flight = 0.0
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and sweep.poll() is None:
            text = _scrape(url)
            if text:
                samples = prom_parse(text)["benchlab_runs_in_flight"]["samples"]
                most_in_flight = max([most_in_flight, *(value for _, value in samples)])
                if mid_sweep is None and "benchlab_point_decode_tokens_per_second{" in text:
                    mid_sweep = text
            time.sleep(0.1)
        output, _ = sweep.communicate(timeout=120)
    finally:
        if sweep.poll() is None:
            sweep.kill()
            sweep.wait(timeout=10)
    assert sweep.returncode == 0, output
    assert mid_sweep is not None, f"no point was scraped while the sweep ran:\n{output}"
    parsed = prom_parse(mid_sweep)
    assert "benchlab_device_up" in parsed
    assert most_in_flight >= 1, "a scrape during the sweep saw points in flight"
    assert _scrape(url) is None, "the server stops with the sweep"

    final = subprocess.run(
        [sys.executable, "-m", "benchlab", "export", str(store / "runs" / "sweeps" / "live")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    decode = prom_parse(final)["benchlab_point_decode_tokens_per_second"]["samples"]
    series = sorted((labels["device"], labels["threads"], value) for labels, value in decode)
    assert series == [
        ("box-a", "1", 15.0),
        ("box-a", "2", 25.0),
        ("box-b", "1", 15.0),
        ("box-b", "2", 25.0),
    ]
    promtool_accepts(final, optional=True)
