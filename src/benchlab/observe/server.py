"""A small HTTP server whose threads, connections and request reading are all bounded.

A connection costs a thread only while it is being answered, and only once its whole request
head is in. Until then it waits in one selector on the serving thread, non-blocking, and its
bytes are gathered there against a deadline that runs from accept and does not move when a
byte arrives: a client that trickles one byte every few seconds (slowloris) is cut off at
`head_timeout_s` exactly like one that sends nothing, and never holds a worker. Heads over
`MAX_HEAD_BYTES` are cut off too. Complete heads go to a fixed pool of `workers` threads,
which answer from the bytes already read (a GET has no body) and write under a total send
timeout. Past `max_connections` open at once, new connections are closed on accept.

The stdlib's ThreadingMixIn starts a thread per connection with no limit, and a pool that
reads the request itself is held by any client whose bytes keep arriving: both are the
faults this replaces.
"""

from __future__ import annotations

import contextlib
import io
import logging
import selectors
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

log = logging.getLogger("benchlab.observe.server")

WORKERS = 4
"""Threads that answer requests; a scrape takes milliseconds, so a few serve any Prometheus."""
HEAD_TIMEOUT_S = 5.0
"""From accept, how long a client has to send its whole request head, however it trickles."""
MAX_CONNECTIONS = 256
"""Open connections at once (waiting or being answered); more are closed on accept."""
MAX_HEAD_BYTES = 16 * 1024
"""A scrape's request head is a few hundred bytes; more than this is not a scraper."""
ACCEPTS_PER_WAKE = 64
"""Connections accepted per wake of the selector, so a flood cannot starve the reading."""
_END_OF_HEAD = b"\r\n\r\n"


@dataclass
class _Pending:
    """A connection whose request head is still arriving."""

    address: Any
    deadline: float
    head: bytearray = field(default_factory=bytearray)


class PrereadHandler(BaseHTTPRequestHandler):
    """A handler that reads its request from the head the server already gathered.

    The server passes `(socket, head bytes)` as the request; nothing here reads the socket,
    so a worker thread can never wait on a slow client's bytes.
    """

    def setup(self) -> None:
        conn, head = self.request
        self.request = conn
        super().setup()
        self.rfile.close()  # the socket's own reader: never read, and it would pin the socket
        self.rfile = io.BytesIO(head)


class BoundedHTTPServer(HTTPServer):
    """See the module docstring; `serve_forever` and `shutdown` are its own."""

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[PrereadHandler],
        *,
        workers: int = WORKERS,
        head_timeout_s: float = HEAD_TIMEOUT_S,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        super().__init__(address, handler)
        self.socket.setblocking(False)
        self.head_timeout_s = head_timeout_s
        self.max_connections = max_connections
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="benchlab-scrape")
        self._lock = threading.Lock()
        self._open = 0
        self._stop = threading.Event()
        self._stopped = threading.Event()
        self._stopped.set()
        self.refused = 0
        """Connections closed on accept because max_connections were open."""
        self.expired = 0
        """Connections closed because their head was not in by the deadline (or too big)."""

    @property
    def open_connections(self) -> int:
        with self._lock:
            return self._open

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        """Accept, gather request heads in the selector, hand complete ones to the pool."""
        self._stopped.clear()
        pending: dict[socket.socket, _Pending] = {}
        try:
            with selectors.DefaultSelector() as selector:
                selector.register(self.socket, selectors.EVENT_READ, None)
                while not self._stop.is_set():
                    now = time.monotonic()
                    soonest = min((p.deadline for p in pending.values()), default=now + 1.0)
                    timeout = max(0.0, min(poll_interval, soonest - now))
                    for key, _ in selector.select(timeout):
                        if key.data is None:
                            self._accept(selector, pending)
                        else:
                            assert isinstance(key.fileobj, socket.socket)
                            self._read(selector, pending, key.fileobj)
                    self._expire(selector, pending)
        finally:
            for conn in list(pending):
                self._close(conn)
            self._stopped.set()

    def _accept(
        self, selector: selectors.BaseSelector, pending: dict[socket.socket, _Pending]
    ) -> None:
        for _ in range(ACCEPTS_PER_WAKE):
            try:
                conn, address = self.socket.accept()
            except OSError:  # BlockingIOError: nobody else is waiting
                return
            with self._lock:
                full = self._open >= self.max_connections
                if not full:
                    self._open += 1
            if full:
                self.refused += 1
                with contextlib.suppress(OSError):
                    conn.close()
                continue
            conn.setblocking(False)
            pending[conn] = _Pending(address, time.monotonic() + self.head_timeout_s)
            selector.register(conn, selectors.EVENT_READ, address)

    def _read(
        self,
        selector: selectors.BaseSelector,
        pending: dict[socket.socket, _Pending],
        conn: socket.socket,
    ) -> None:
        """Take what has arrived; a complete head goes to the pool, a hang-up is closed."""
        waiting = pending[conn]
        try:
            chunk = conn.recv(4096)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if chunk:
            waiting.head += chunk
            end = waiting.head.find(_END_OF_HEAD)
            if end < 0 and len(waiting.head) <= MAX_HEAD_BYTES:
                return
        selector.unregister(conn)
        del pending[conn]
        if not chunk or len(waiting.head) > MAX_HEAD_BYTES:
            if chunk:
                self.expired += 1
            self._close(conn)
            return
        self._pool.submit(self._answer, conn, waiting.address, bytes(waiting.head))

    def _expire(
        self, selector: selectors.BaseSelector, pending: dict[socket.socket, _Pending]
    ) -> None:
        now = time.monotonic()
        for conn in [c for c, p in pending.items() if p.deadline <= now]:
            selector.unregister(conn)
            del pending[conn]
            self.expired += 1
            self._close(conn)

    def _answer(self, conn: socket.socket, address: Any, head: bytes) -> None:
        try:
            conn.setblocking(True)
            conn.settimeout(self.head_timeout_s)  # sendall: a total limit since Python 3.5
            self.finish_request((conn, head), address)  # type: ignore[arg-type]
        except Exception:
            self.handle_error(conn, address)
        finally:
            self._close(conn)

    def _close(self, conn: socket.socket) -> None:
        self.shutdown_request(conn)
        with self._lock:
            self._open -= 1

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that stalls or hangs up is routine here: log it, do not print a trace."""
        log.debug("request from %s failed", client_address, exc_info=True)

    def shutdown(self) -> None:
        """Stop serve_forever (from another thread) and wait until it has returned."""
        self._stop.set()
        self._stopped.wait()

    def server_close(self) -> None:
        super().server_close()
        self._pool.shutdown(wait=False, cancel_futures=True)
