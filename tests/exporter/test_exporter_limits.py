"""The exporter under a flood of idle loopback connections: bounded threads, timeouts, answers.

The first test runs the real `bench export --serve` in a child process and counts that
process's threads in /proc while 100 idle connections are open; the old ThreadingHTTPServer
held one thread per connection, forever. The slowloris test keeps clients trickling one byte
at a time, each byte well inside the idle timeout, so only a deadline on the whole request
head cuts them off. Every socket, thread and process is closed in `finally`.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchlab.layout import Store, atomic_write_json
from benchlab.observe.exporter import serve_in_background
from benchlab.observe.server import MAX_HEAD_BYTES

IDLE = 100
IDLE_TIMEOUT_S = 1.5
WORKERS = 2
TRICKLERS = 6
TRICKLE_S = 0.4
"""A byte every 0.4 s: never idle for IDLE_TIMEOUT_S, so a per-read timeout never fires."""


@pytest.fixture
def sweep_dir(store: Path) -> Path:
    sweep = Store(store).sweep_dir("lab")
    atomic_write_json(sweep / "state.json", {"experiment": "lab", "stamp": "20261201T000000Z"})
    return sweep


def threads_of(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    raise AssertionError("no Threads line")


@contextlib.contextmanager
def idle_connections(port: int, count: int) -> Iterator[list[socket.socket]]:
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sockets.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        yield sockets
    finally:
        for sock in sockets:
            sock.close()


def closed_by_server(sock: socket.socket, within: float) -> bool:
    """True when the server closed `sock` (EOF or reset) within `within` seconds."""
    sock.settimeout(within)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        assert response.status == 200
        return response.read().decode()


@pytest.fixture
def served(sweep_dir: Path) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """`bench export DIR --serve` on a free loopback port, as a child process."""
    argv = [
        sys.executable, "-m", "benchlab", "export", str(sweep_dir), "--serve", "--port", "0",
        "--idle-timeout", str(IDLE_TIMEOUT_S), "--workers", str(WORKERS),
    ]  # fmt: skip
    process = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        assert process.stdout is not None
        ready: list[str] = []
        reader = threading.Thread(target=lambda: ready.append(process.stdout.readline()))
        reader.start()
        reader.join(30)
        assert ready and "http://127.0.0.1:" in ready[0], (ready, process.poll())
        port = int(ready[0].split("http://127.0.0.1:")[1].split("/")[0])
        yield process, port
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


@pytest.mark.slow
def test_idle_connections_hold_no_threads_and_a_scrape_still_answers(
    served: tuple[subprocess.Popen[str], int],
) -> None:
    process, port = served
    baseline = threads_of(process.pid)
    with idle_connections(port, IDLE) as sockets:
        last_opened = time.monotonic()
        time.sleep(0.3)
        # The old server: baseline + IDLE threads. Now: at most the worker pool on top.
        assert threads_of(process.pid) <= baseline + WORKERS
        started = time.monotonic()
        text = scrape(port)
        assert "# TYPE benchlab_device_up gauge" in text
        assert time.monotonic() - started < 2.0
        assert threads_of(process.pid) <= baseline + WORKERS
        # Every idle connection is closed by the server after the idle timeout, not before.
        deadline = time.monotonic() + IDLE_TIMEOUT_S + 5
        assert closed_by_server(sockets[-1], deadline - time.monotonic())
        assert time.monotonic() - last_opened >= IDLE_TIMEOUT_S * 0.9
        for sock in sockets:
            assert closed_by_server(sock, max(0.1, deadline - time.monotonic()))
    assert threads_of(process.pid) <= baseline + WORKERS
    assert process.poll() is None


@pytest.mark.slow
def test_a_stalled_half_request_is_cut_off_and_frees_its_worker(
    served: tuple[subprocess.Popen[str], int],
) -> None:
    _, port = served
    with idle_connections(port, WORKERS + 2) as stalled:
        for sock in stalled:
            sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")  # never finished
        started = time.monotonic()
        for sock in stalled:
            assert closed_by_server(sock, IDLE_TIMEOUT_S * 2 + 5)
        assert time.monotonic() - started < IDLE_TIMEOUT_S * 2 + 5
    assert "benchlab_device_up" in scrape(port)


@pytest.mark.slow
def test_connections_past_the_cap_are_closed_on_accept(sweep_dir: Path) -> None:
    server = serve_in_background(sweep_dir, 0, max_connections=10, idle_timeout_s=5.0, workers=2)
    before = threading.active_count()
    try:
        port = server.server_address[1]
        with idle_connections(port, 30) as sockets:
            deadline = time.monotonic() + 5
            while server.refused < 20 and time.monotonic() < deadline:
                time.sleep(0.02)
            assert server.refused == 20
            assert server.open_connections == 10
            assert threading.active_count() <= before + 2
            assert sum(closed_by_server(sock, 0.05) for sock in sockets[10:]) == 20
            for sock in sockets[:10]:
                sock.close()
            deadline = time.monotonic() + 5
            while server.open_connections and time.monotonic() < deadline:
                time.sleep(0.02)
        # Once the idle ones are gone, scrapes are accepted again.
        assert "benchlab_device_up" in scrape(port)
        assert json.dumps(server.expired) is not None
    finally:
        server.shutdown()
        server.server_close()


class Trickler(threading.Thread):
    """A slowloris client: connects, sends its never-ending head a byte at a time, and
    reconnects whenever the server drops it, until `stop`; `held` lists how long each
    connection lasted before the server cut it."""

    HEAD = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 400

    def __init__(self, port: int, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.port, self.stop = port, stop
        self.held: list[float] = []

    def run(self) -> None:
        while not self.stop.is_set():
            opened = time.monotonic()
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=5) as sock:
                    for byte in self.HEAD:
                        if self.stop.wait(TRICKLE_S):
                            return
                        sock.sendall(bytes([byte]))
            except OSError:
                self.held.append(time.monotonic() - opened)


@pytest.mark.slow
def test_trickling_clients_are_cut_off_and_scrapes_still_answer(
    served: tuple[subprocess.Popen[str], int],
) -> None:
    """Before the limits, four clients sending a byte every 3 s made every real scrape time out."""
    process, port = served
    baseline = threads_of(process.pid)
    stop = threading.Event()
    tricklers = [Trickler(port, stop) for _ in range(TRICKLERS)]
    try:
        for trickler in tricklers:
            trickler.start()
        time.sleep(0.5)  # every trickler connected and sending, more clients than workers
        answered: list[float] = []
        until = time.monotonic() + IDLE_TIMEOUT_S * 3
        while time.monotonic() < until:
            started = time.monotonic()
            assert "benchlab_device_up" in scrape(port)
            answered.append(time.monotonic() - started)
            time.sleep(0.2)
        assert max(answered) < 1.0, answered
        assert threads_of(process.pid) <= baseline + WORKERS
    finally:
        stop.set()
        for trickler in tricklers:
            trickler.join(timeout=10)
    assert not any(trickler.is_alive() for trickler in tricklers)
    held = [seconds for trickler in tricklers for seconds in trickler.held]
    assert len(held) >= TRICKLERS, "every trickler was dropped at least once"
    # Cut at the head deadline (from accept), not after the head's 400 bytes would be in.
    assert all(IDLE_TIMEOUT_S * 0.9 <= seconds < IDLE_TIMEOUT_S + 2 for seconds in held), held
    assert process.poll() is None


def test_an_oversized_head_is_cut_off_at_once(sweep_dir: Path) -> None:
    server = serve_in_background(sweep_dir, 0, idle_timeout_s=30.0, workers=1)
    try:
        port = server.server_address[1]
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall(b"GET /metrics HTTP/1.1\r\nX-Pad: " + b"a" * MAX_HEAD_BYTES)
            assert closed_by_server(sock, 5.0)
        assert server.expired == 1
        assert "benchlab_device_up" in scrape(port)
    finally:
        server.shutdown()
        server.server_close()
