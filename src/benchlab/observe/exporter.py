"""Prometheus metrics of a sweep, read from disk at scrape time.

Invariant 10: observers are never in the write path. Every number here was written to disk by
the scheduler or the runner first, so a scrape that never happens costs a graph, not a
measurement, and a finished sweep directory serves the same metrics as a live one.

Labels are bounded and complete (seed 000): device, backend, model, quantisation, mode,
threads and token shape. Run ids and timestamps are never labels; leaving out a swept axis
would silently collapse different measurements onto one series.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from benchlab.errors import StoreError
from benchlab.layout import (
    IN_FLIGHT,
    MANIFEST,
    RECORD,
    RETRIES,
    SCHEDULE,
    SWEEP_STATE,
    Store,
)
from benchlab.observe.exposition import CONTENT_TYPE, MetricFamily, render
from benchlab.sweep.schedule_log import read_retries

log = logging.getLogger("benchlab.observe.exporter")

POINT_LABELS = ("device", "backend", "model", "quantisation", "mode", "threads", "shape")


def load_if_present(path: Path) -> Any:
    """A file another process may be replacing right now: absent or unreadable reads as None."""
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None


def _shape(prompt: object, gen: object) -> str:
    if prompt is None and gen is None:
        return ""
    return f"p{prompt if prompt is not None else '-'}/n{gen if gen is not None else '-'}"


def point_labels(record: dict[str, Any], manifest: dict[str, Any] | None) -> dict[str, str]:
    """The complete label set of one point, from its spec (or, for old records, its manifest)."""
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


def make_server(
    sweep_dir: Path, port: int, host: str = "127.0.0.1", *, live: bool = False
) -> ThreadingHTTPServer:
    """A metrics server for one sweep dir; port 0 picks a free port (server.server_address).

    `live`: the sweep is about to start, so its directory may not exist yet (503 until it
    does); otherwise a directory that is not a sweep is refused before binding.
    """
    if not live:
        SweepView(sweep_dir)
    handler = type("SweepHandler", (_Handler,), {"sweep_dir": sweep_dir})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server


def serve_in_background(
    sweep_dir: Path, port: int, host: str = "127.0.0.1", *, live: bool = False
) -> ThreadingHTTPServer:
    """Start serving on a daemon thread; call `.shutdown()` and `.server_close()` to stop."""
    server = make_server(sweep_dir, port, host, live=live)
    threading.Thread(target=server.serve_forever, name="benchlab-exporter", daemon=True).start()
    return server
