"""Prometheus metrics of a sweep, read from disk at scrape time.

Invariant 10: observers are never in the write path. Every number here was written to disk by
the scheduler or the runner first, so a scrape that never happens costs a graph, not a
measurement, and a finished sweep directory serves the same metrics as a live one.

Labels are bounded and complete (seed 000): device, backend, model, quantisation, mode,
threads and token shape. Run ids and timestamps are never labels; leaving out a swept axis
would silently collapse different measurements onto one series.

The HTTP server is bounded (`MetricsServer`): a connection costs a thread only while it is
being answered. Idle connections wait in one selector on the serving thread and are closed
after `idle_timeout_s`; readable ones go to a fixed pool of `workers` threads, whose sockets
time out after `idle_timeout_s` too (a client that sends half a request and stalls); past
`max_connections` open at once, new ones are closed on accept. So 400 idle clients hold 400
file descriptors for a few seconds, never 400 threads, and a real scrape still answers.
"""

from __future__ import annotations

import contextlib
import logging
import selectors
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

from benchlab.errors import StoreError
from benchlab.identity import series_id, shape
from benchlab.layout import (
    IN_FLIGHT,
    MANIFEST,
    RECORD,
    RETRIES,
    SCHEDULE,
    SWEEP_STATE,
    Store,
    loads_json,
)
from benchlab.observe.exposition import CONTENT_TYPE, MetricFamily, render
from benchlab.sweep.schedule_log import read_retries

log = logging.getLogger("benchlab.observe.exporter")

POINT_LABELS = (
    "device",
    "backend",
    "model",
    "quantisation",
    "mode",
    "threads",
    "shape",
    "backend_version",
    "series",
)
"""`series` is the catalog's series id (benchlab.identity): a dashboard can join a live point
to its published history; the other labels spell out the identity for people."""


def load_if_present(path: Path) -> Any:
    """A file another process may be replacing right now: absent or unreadable reads as None.

    Parsed with the guarded reader, so a hostile file (100k nested `[`, NaN) is unreadable
    too instead of a RecursionError in a scrape thread.
    """
    try:
        return loads_json(path.read_bytes(), path)
    except (OSError, StoreError):
        return None


def _shape(prompt: object, gen: object) -> str:
    if prompt is None and gen is None:
        return ""
    return f"p{prompt if prompt is not None else '-'}/n{gen if gen is not None else '-'}"


def point_labels(record: dict[str, Any], manifest: dict[str, Any] | None) -> dict[str, str]:
    """The complete label set of one point: its measurement identity as the record states it
    (the one the catalog publishes), else its spec, else (old records) its manifest."""
    identity = record.get("identity")
    if isinstance(identity, dict):
        values = {
            "device": (record.get("spec") or {}).get("device") or record.get("device"),
            "backend": identity.get("backend"),
            "model": identity.get("model_id"),
            "quantisation": identity.get("precision"),
            "mode": identity.get("mode"),
            "threads": identity.get("threads"),
            "shape": shape(identity),
            "backend_version": identity.get("backend_version"),
            "series": series_id(identity),
        }
        return {key: "" if value is None else str(value) for key, value in values.items()}
    spec = record.get("spec") or {}
    config = (manifest or {}).get("config") or {}
    model = (manifest or {}).get("model") or {}
    values = {
        "device": spec.get("device") or record.get("device"),
        "backend": spec.get("backend") or (manifest or {}).get("backend"),
        "model": spec.get("model") or model.get("name"),
        "quantisation": spec.get("precision") or model.get("precision"),
        "mode": spec.get("mode") or (manifest or {}).get("mode"),
        "threads": spec.get("threads", config.get("threads")),
        "shape": _shape(
            spec.get("prompt_tokens", config.get("prompt_tokens")),
            spec.get("gen_tokens", config.get("gen_tokens")),
        ),
        "backend_version": None,
        "series": None,
    }
    return {key: "" if value is None else str(value) for key, value in values.items()}


class SweepView:
    """Everything the exporter reads for one sweep directory (runs/sweeps/<experiment>/)."""

    def __init__(self, sweep_dir: Path) -> None:
        self.sweep_dir = sweep_dir
        if not (sweep_dir / SWEEP_STATE).is_file():
            raise StoreError(f"{sweep_dir}: not a sweep directory (no {SWEEP_STATE})")
        self.store = Store(sweep_dir.parent.parent.parent)

    def state(self) -> dict[str, Any]:
        return load_if_present(self.sweep_dir / SWEEP_STATE) or {}

    def schedule(self) -> dict[str, Any]:
        return load_if_present(self.sweep_dir / SCHEDULE) or {}

    def records(self) -> Iterator[tuple[dict[str, Any], dict[str, Any] | None]]:
        """Records of this sweep (same experiment, run id ending in the sweep's stamp)."""
        state = self.state()
        experiment, stamp = state.get("experiment"), state.get("stamp")
        by_machine = self.store.by_machine
        for record_path in sorted(by_machine.glob(f"*/*-{stamp}/{RECORD}")):
            record = load_if_present(record_path)
            if not isinstance(record, dict) or record.get("experiment") != experiment:
                continue
            yield record, load_if_present(record_path.parent / MANIFEST)


def _device_states(schedule: dict[str, Any]) -> dict[str, dict[str, Any]]:
    devices = schedule.get("devices")
    return (
        {k: v for k, v in devices.items() if isinstance(v, dict)}
        if isinstance(devices, dict)
        else {}
    )


def _effective_cores(specs: Any) -> float | None:
    """The cgroup quota in cores where one is set, else the logical cores: what a point can use."""
    hardware = (specs or {}).get("hardware") or {}
    quota = (hardware.get("cgroup_cpu") or {}).get("quota_cores")
    if isinstance(quota, (int, float)):
        return float(quota)
    cores = (hardware.get("cpu") or {}).get("cores_logical")
    return float(cores) if isinstance(cores, (int, float)) else None


def collect(view: SweepView) -> list[MetricFamily]:
    """Read the sweep from disk and turn it into metric families."""
    schedule = view.schedule()
    up = MetricFamily(
        "benchlab_device_up", "1 when the device is in service (breaker closed), else 0."
    )
    offset = MetricFamily(
        "benchlab_clock_offset_seconds",
        "Device clock minus controller clock (Cristian's algorithm).",
    )
    uncertainty = MetricFamily(
        "benchlab_clock_uncertainty_seconds", "Transport time not accounted for in the offset."
    )
    agreeing = MetricFamily(
        "benchlab_clock_agreeing", "1 when the offset lies inside its own uncertainty."
    )
    quota = MetricFamily(
        "benchlab_cpu_quota_cores", "Effective CPU quota (cgroup quota, else logical cores)."
    )
    finished = MetricFamily(
        "benchlab_runs_finished", "Points finished in this sweep, by status and failure kind."
    )
    in_flight = MetricFamily("benchlab_runs_in_flight", "Points running now on the device.")
    trips = MetricFamily("benchlab_breaker_trips", "Times the device's circuit breaker opened.")
    retries = MetricFamily(
        "benchlab_transport_failures", "Transport failures written to retries.jsonl."
    )
    prefill = MetricFamily(
        "benchlab_point_prefill_tokens_per_second", "Prefill throughput of a finished point."
    )
    decode = MetricFamily(
        "benchlab_point_decode_tokens_per_second", "Decode throughput of a finished point."
    )
    peak = MetricFamily(
        "benchlab_point_peak_tokens_per_second", "Peak batched aggregate throughput of a point."
    )
    power = MetricFamily(
        "benchlab_point_power_watts", "Median power sampled on the device during the point."
    )
    temperature = MetricFamily(
        "benchlab_point_temperature_celsius", "Maximum temperature sampled during the point."
    )

    records = list(view.records())
    machine_of = {str(r.get("device")): str(r.get("machine_id")) for r, _ in records}
    in_flight_now = load_if_present(view.sweep_dir / IN_FLIGHT) or {}
    clocks = schedule.get("clocks") if isinstance(schedule.get("clocks"), dict) else {}
    for device, info in sorted(_device_states(schedule).items()):
        labels = {"device": device}
        breaker = info.get("breaker") if isinstance(info.get("breaker"), dict) else {}
        state = breaker.get("state")
        if state is not None:
            up.add(labels, 1.0 if state == "closed" else 0.0)
        trips.add(labels, len(breaker.get("trips") or []))
        in_flight.add(
            labels, in_flight_now.get(device, 0) if isinstance(in_flight_now, dict) else 0
        )
        specs = view.store.private_specs(machine_of.get(device, device))
        quota.add(labels, _effective_cores(load_if_present(specs)))
        clock = clocks.get(device)
        if isinstance(clock, dict) and "error" not in clock:
            offset.add(labels, clock.get("offset_s"))
            uncertainty.add(labels, clock.get("uncertainty_s"))
            if clock.get("agreeing") is not None:
                agreeing.add(labels, 1.0 if clock["agreeing"] else 0.0)

    failure_counts: Counter[str] = Counter(
        str(line.get("device", ""))
        for line in read_retries(view.sweep_dir / RETRIES)
        if line.get("kind") == "transport"
    )
    for device, count in sorted(failure_counts.items()):
        retries.add({"device": device}, count)

    outcome_counts: Counter[tuple[str, str, str]] = Counter()
    for record, manifest in records:
        labels = point_labels(record, manifest)
        kind = record.get("failure_kind") or ""
        outcome_counts[(labels["device"], str(record.get("status", "")), kind)] += 1
        if record.get("status") != "ok":
            continue
        metrics = record.get("metrics") or {}
        prefill.add(labels, metrics.get("prefill_tok_per_sec"))
        decode.add(labels, metrics.get("decode_tok_per_sec"))
        peak.add(labels, metrics.get("peak_tok_per_sec"))
        telemetry = record.get("telemetry") or {}
        power.add(labels, _summary(telemetry, "power_w", "median"))
        temperature.add(labels, _summary(telemetry, "temperature_c", "max"))
    for (device, status, kind), count in sorted(outcome_counts.items()):
        finished.add({"device": device, "status": status, "failure_kind": kind}, count)

    return [
        up,
        offset,
        uncertainty,
        agreeing,
        quota,
        finished,
        in_flight,
        trips,
        retries,
        prefill,
        decode,
        peak,
        power,
        temperature,
    ]


def _summary(telemetry: dict[str, Any], key: str, stat: str) -> float | None:
    """Telemetry summaries are {key: {min, median, max}} or a bare number; anything else is None."""
    value = telemetry.get(key)
    if isinstance(value, dict):
        value = value.get(stat)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def scrape(sweep_dir: Path) -> str:
    return render(collect(SweepView(sweep_dir)))


class _Handler(BaseHTTPRequestHandler):
    sweep_dir: Path

    def do_GET(self) -> None:
        if self.path.split("?", 1)[0] not in ("/metrics", "/"):
            self.send_error(404, "only /metrics is served")
            return
        try:
            body = scrape(self.sweep_dir).encode("utf-8")
        except StoreError as exc:
            self.send_error(503, str(exc))
            return
        self.send_response(200)
        self.send_header("Content-Type", CONTENT_TYPE)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        log.debug("scrape: " + format, *args)


WORKERS = 4
"""Threads that answer requests; a scrape takes milliseconds, so a few serve any Prometheus."""
IDLE_TIMEOUT_S = 5.0
"""How long a connection may sit without a complete request before it is closed."""
MAX_CONNECTIONS = 256
"""Open connections at once (waiting or being answered); more are closed on accept."""


class MetricsServer(HTTPServer):
    """An HTTP server whose threads and connections are bounded (see the module docstring).

    `serve_forever` and `shutdown` are its own: the stdlib's ThreadingMixIn starts a thread
    per accepted connection with no limit and no timeout, which is the fault this replaces.
    """

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        *,
        workers: int = WORKERS,
        idle_timeout_s: float = IDLE_TIMEOUT_S,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        super().__init__(address, handler)
        self.idle_timeout_s = idle_timeout_s
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
        """Idle connections closed after idle_timeout_s without a request."""

    @property
    def open_connections(self) -> int:
        with self._lock:
            return self._open

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        """Accept, park idle connections in the selector, hand readable ones to the pool."""
        self._stopped.clear()
        waiting: dict[socket.socket, tuple[Any, float]] = {}
        try:
            with selectors.DefaultSelector() as selector:
                selector.register(self.socket, selectors.EVENT_READ, None)
                while not self._stop.is_set():
                    now = time.monotonic()
                    soonest = min((d for _, d in waiting.values()), default=now + poll_interval)
                    timeout = max(0.0, min(poll_interval, soonest - now))
                    for key, _ in selector.select(timeout):
                        if key.data is None:
                            self._accept(selector, waiting)
                            continue
                        conn = key.fileobj
                        assert isinstance(conn, socket.socket)
                        selector.unregister(conn)
                        address, _ = waiting.pop(conn)
                        self._pool.submit(self._answer, conn, address)
                    now = time.monotonic()
                    for conn in [c for c, (_, d) in waiting.items() if d <= now]:
                        selector.unregister(conn)
                        del waiting[conn]
                        self.expired += 1
                        self._close(conn)
        finally:
            for conn in list(waiting):
                self._close(conn)
            self._stopped.set()

    def _accept(
        self, selector: selectors.BaseSelector, waiting: dict[socket.socket, tuple[Any, float]]
    ) -> None:
        try:
            conn, address = self.socket.accept()
        except OSError:
            return
        with self._lock:
            full = self._open >= self.max_connections
            if not full:
                self._open += 1
        if full:
            self.refused += 1
            with contextlib.suppress(OSError):
                conn.close()
            return
        conn.settimeout(self.idle_timeout_s)
        waiting[conn] = (address, time.monotonic() + self.idle_timeout_s)
        selector.register(conn, selectors.EVENT_READ, address)

    def _answer(self, conn: socket.socket, address: Any) -> None:
        try:
            self.finish_request(conn, address)
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
        log.debug("scrape from %s failed", client_address, exc_info=True)

    def shutdown(self) -> None:
        """Stop serve_forever (from another thread) and wait until it has returned."""
        self._stop.set()
        self._stopped.wait()

    def server_close(self) -> None:
        super().server_close()
        self._pool.shutdown(wait=False, cancel_futures=True)


def make_server(
    sweep_dir: Path,
    port: int,
    host: str = "127.0.0.1",
    *,
    live: bool = False,
    workers: int = WORKERS,
    idle_timeout_s: float = IDLE_TIMEOUT_S,
    max_connections: int = MAX_CONNECTIONS,
) -> MetricsServer:
    """A metrics server for one sweep dir; port 0 picks a free port (server.server_address).

    `live`: the sweep is about to start, so its directory may not exist yet (503 until it
    does); otherwise a directory that is not a sweep is refused before binding.
    """
    if not live:
        SweepView(sweep_dir)
    handler = type("SweepHandler", (_Handler,), {"sweep_dir": sweep_dir, "timeout": idle_timeout_s})
    return MetricsServer(
        (host, port),
        handler,
        workers=workers,
        idle_timeout_s=idle_timeout_s,
        max_connections=max_connections,
    )


def serve_in_background(
    sweep_dir: Path, port: int, host: str = "127.0.0.1", *, live: bool = False, **limits: Any
) -> MetricsServer:
    """Start serving on a daemon thread; call `.shutdown()` and `.server_close()` to stop."""
    server = make_server(sweep_dir, port, host, live=live, **limits)
    threading.Thread(target=server.serve_forever, name="benchlab-exporter", daemon=True).start()
    return server
