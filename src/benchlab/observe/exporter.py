"""Prometheus metrics of a sweep, read from disk at scrape time.

ARCHITECTURE.md, invariant 10: observers are never in the write path. Every number here was written
to disk by the scheduler or the runner first, so a scrape that never happens costs a graph, not a
measurement, and a finished sweep directory serves the same metrics as a live one.

Labels are bounded and complete (ARCHITECTURE.md, Observers): machine, device, backend, model,
quantisation, mode, threads and token shape. Run ids, timestamps and repeat indexes are never labels
(a time budget adds a round per point without end); leaving out a swept axis would silently collapse
different measurements onto one series. Every series appears once per scrape: repeats and budget
rounds of a point are combined into one value (`point_metrics`), and device series are keyed by
machine and device, since every machine may name its device `local`.

The HTTP server is bounded (`MetricsServer`, benchlab.observe.server): a connection costs a
thread only once its whole request head is in, and that head must arrive within
`idle_timeout_s` of accept however slowly its bytes trickle; past `max_connections` open at
once, new ones are closed on accept. So 400 idle or trickling clients hold 400 file
descriptors for a few seconds, never a thread, and a real scrape still answers.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchlab.detect.stats import is_outlier
from benchlab.errors import StoreError
from benchlab.files import read_bytes
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
from benchlab.metrics import DECODE, PREFILL, Metric, better_word, exported
from benchlab.models import MachineSpecs
from benchlab.observe.exposition import CONTENT_TYPE, MetricFamily, render
from benchlab.observe.server import (
    HEAD_TIMEOUT_S,
    MAX_CONNECTIONS,
    WORKERS,
    BoundedHTTPServer,
    PrereadHandler,
)
from benchlab.query.level import current_level
from benchlab.query.roofline import json_mbu, mbu_at, mfu_at
from benchlab.sweep.schedule_log import read_retries

log = logging.getLogger("benchlab.observe.exporter")

POINT_LABELS = (
    "machine",
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
to its published history; the other labels spell out the identity for people. `machine`
comes first: two machines may both call their device `local`."""


def load_if_present(path: Path) -> Any:
    """A file another process may be replacing right now: absent or unreadable reads as None.

    Parsed with the guarded reader, so a hostile file (100k nested `[`, NaN) is unreadable
    too instead of a RecursionError in a scrape thread.
    """
    try:
        return loads_json(read_bytes(path), path)
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
            "machine": record.get("machine_id"),
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
        "machine": record.get("machine_id") or spec.get("machine_id"),
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


def _machine_of_devices(
    schedule: dict[str, Any], records: list[tuple[dict[str, Any], dict[str, Any] | None]]
) -> dict[str, str]:
    """Which machine each device id of the schedule is, for its device-state series.

    A device id is only unique within one machine's config (every laptop may call its
    device `local`), so device series carry the machine too. The schedule's own word wins
    (`machine_id` in its device state), then its assignments', then the machine of the
    device's newest record; else the device id, which is what a config means when it names
    no machine.
    """
    newest: dict[str, tuple[str, str]] = {}
    for record, _ in records:
        device, machine = record.get("device"), record.get("machine_id")
        if device is None or machine is None:
            continue
        finished = str((record.get("timings") or {}).get("finished_at") or "")
        if str(device) not in newest or finished >= newest[str(device)][0]:
            newest[str(device)] = (finished, str(machine))
    out = {device: machine for device, (_, machine) in newest.items()}
    assignments = schedule.get("assignments")
    for line in assignments if isinstance(assignments, list) else []:
        if isinstance(line, dict) and isinstance(line.get("machine_id"), str):
            out[str(line.get("device"))] = line["machine_id"]
    for device, info in _device_states(schedule).items():
        machine = info.get("machine_id") or info.get("machine")
        if isinstance(machine, str) and machine:
            out[device] = machine
    return out


def _device_families(
    view: SweepView,
    schedule: dict[str, Any],
    records: list[tuple[dict[str, Any], dict[str, Any] | None]],
) -> list[MetricFamily]:
    """Per-device state: breaker, clock, quota, points in flight, transport failures."""
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
    in_flight = MetricFamily("benchlab_runs_in_flight", "Points running now on the device.")
    trips = MetricFamily("benchlab_breaker_trips", "Times the device's circuit breaker opened.")
    retries = MetricFamily(
        "benchlab_transport_failures", "Transport failures written to retries.jsonl."
    )
    machine_of = _machine_of_devices(schedule, records)
    in_flight_now = load_if_present(view.sweep_dir / IN_FLIGHT) or {}
    clocks = schedule.get("clocks")
    if not isinstance(clocks, dict):
        clocks = {}
    for device, info in sorted(_device_states(schedule).items()):
        machine = machine_of.get(device, device)
        labels = {"machine": machine, "device": device}
        breaker = info.get("breaker")
        if not isinstance(breaker, dict):
            breaker = {}
        state = breaker.get("state")
        if state is not None:
            up.add(labels, 1.0 if state == "closed" else 0.0)
        trips.add(labels, len(breaker.get("trips") or []))
        in_flight.add(
            labels, in_flight_now.get(device, 0) if isinstance(in_flight_now, dict) else 0
        )
        quota.add(labels, _effective_cores(load_if_present(view.store.private_specs(machine))))
        clock = clocks.get(device)
        if isinstance(clock, dict) and "error" not in clock:
            offset.add(labels, clock.get("offset_s"))
            uncertainty.add(labels, clock.get("uncertainty_s"))
            if clock.get("agreeing") is not None:
                agreeing.add(labels, 1.0 if clock["agreeing"] else 0.0)

    failure_counts: Counter[tuple[str, str]] = Counter()
    for line in read_retries(view.sweep_dir / RETRIES):
        if line.get("kind") == "transport":
            device = str(line.get("device", ""))
            machine = line.get("machine_id") or machine_of.get(device, device)
            failure_counts[(str(machine), device)] += 1
    for (machine, device), count in sorted(failure_counts.items()):
        retries.add({"machine": machine, "device": device}, count)
    return [up, offset, uncertainty, agreeing, quota, in_flight, trips, retries]


def _point_metric(metric: Metric) -> tuple[str, str, str, str]:
    """A registry metric's family: its `export` name, its display name and the current
    level over the point's ok runs; a millisecond metric in seconds."""
    assert metric.export is not None
    unit = "seconds" if metric.unit == "ms" else metric.unit
    text = f"{metric.title} of a point ({unit}; {better_word(metric.name)})"
    how = "median_ms" if metric.unit == "ms" else "median"
    return (metric.export, f"{text}: its current level over its ok runs.", metric.name, how)


def point_metrics() -> tuple[tuple[str, str, str, str], ...]:
    """(name, help, where the value is, how repeats combine), read from the registry at each call
    (`metrics.exported`): each registry metric with an `export` family
    (`metrics.Metric.export`), then the telemetry. Repeats and budget rounds are runs of one
    point with one label set, and a scrape may hold a series once: they are combined here rather
    than told apart by a `repeat` label, which a time budget would grow without bound (up to
    10,000 rounds per point). `benchlab_point_runs` says how many runs each value combines
    (marked outliers left out); the spread between them is the catalog's to show. A rate is the
    point's current level (`query.level.current_level`: the mean of the newest segment of its
    runs, the one meaning of "best" the CLI and the site share); `median_ms` is a millisecond
    metric at its level given in seconds, Prometheus' base unit, as the family name says."""
    return (*(_point_metric(m) for m in exported()), *_TELEMETRY_METRICS)


_TELEMETRY_METRICS: tuple[tuple[str, str, str, str], ...] = (
    (
        "benchlab_point_power_watts",
        "Median power sampled on the device during the point (its level over its ok runs).",
        "telemetry:power_w:median",
        "median",
    ),
    (
        "benchlab_point_temperature_celsius",
        "Maximum temperature sampled during the point (the hottest of its ok runs).",
        "telemetry:temperature_c:max",
        "max",
    ),
)


def _point_value(record: dict[str, Any], where: str) -> float | None:
    if where.startswith("telemetry:"):
        _, key, stat = where.split(":")
        return _summary(record.get("telemetry") or {}, key, stat)
    value = (record.get("metrics") or {}).get(where)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


MBU_FAMILY = (
    "benchlab_point_mbu_percent",
    "Model bandwidth utilisation of a point: its decode level x bytes per token over its "
    "machine's memory bandwidth, in percent (absent where the machine has no figure).",
)
MFU_FAMILY = (
    "benchlab_point_mfu_percent",
    "Model FLOPs utilisation of a point: its prefill level x 2 x the model's parameters over "
    "its machine's peak dense FP16 FLOP/s, in percent (absent where the machine has no figure).",
)


class _Specs:
    """Each machine's specs, read once per scrape; a missing or malformed file is no specs
    (a scrape never fails on one machine's file)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.found: dict[str, Any] = {}

    def get(self, machine: str) -> Any:
        if machine not in self.found:
            self.found[machine] = self._read(machine)
        return self.found[machine]

    def _read(self, machine: str) -> Any:
        from pydantic import ValidationError

        for path in (self.store.private_specs(machine), self.store.public_specs(machine)):
            data = load_if_present(path)
            if isinstance(data, dict):
                try:
                    return MachineSpecs.model_validate(data)
                except ValidationError:
                    return None
        return None


def _mbu(
    record: dict[str, Any], labels: dict[str, str], rate: float, specs: _Specs, *, mfu: bool = False
) -> Any:
    """A point's MBU at its decode level (with `mfu`: its MFU at its prefill level;
    ARCHITECTURE.md, How close to the hardware), or None where the machine has no figure or
    the model no bytes (parameters) per token."""
    machine = labels["machine"]
    found = specs.get(machine)
    if found is None:
        return None
    entry = {**(record.get("identity") or {}), "machine_id": machine}
    judge = mfu_at if mfu else mbu_at
    return json_mbu(judge(entry, {machine: found}, rate))


def _point_families(
    records: list[tuple[dict[str, Any], dict[str, Any] | None]],
    specs: _Specs | None = None,
) -> list[MetricFamily]:
    """Outcome counts per device, and one sample per point and metric over its ok runs."""
    finished = MetricFamily(
        "benchlab_runs_finished", "Points finished in this sweep, by status and failure kind."
    )
    runs = MetricFamily(
        "benchlab_point_runs", "Ok runs of a point (repeats, budget rounds) its values combine."
    )
    point_specs = point_metrics()
    families = [MetricFamily(name, text) for name, text, _, _ in point_specs]
    mbu = MetricFamily(*MBU_FAMILY)
    mfu = MetricFamily(*MFU_FAMILY)
    outcome_counts: Counter[tuple[str, str, str, str]] = Counter()
    points: dict[tuple[tuple[str, str], ...], list[dict[str, Any]]] = {}
    for record, manifest in records:
        labels = point_labels(record, manifest)
        kind = record.get("failure_kind") or ""
        status = str(record.get("status", ""))
        outcome_counts[(labels["machine"], labels["device"], status, kind)] += 1
        if status == "ok" and not is_outlier(record):  # a marked run never counts
            points.setdefault(tuple(sorted(labels.items())), []).append(record)
    for (machine, device, status, kind), count in sorted(outcome_counts.items()):
        labels = {"machine": machine, "device": device, "status": status, "failure_kind": kind}
        finished.add(labels, count)
    for key, group in sorted(points.items()):
        labels = dict(key)
        group.sort(key=_run_order)
        runs.add(labels, len(group))
        for family, (_, _, where, how) in zip(families, point_specs, strict=True):
            values = [v for v in (_point_value(r, where) for r in group) if v is not None]
            if values:
                family.add(labels, _combine(values, how))
                if where in (DECODE.name, PREFILL.name) and specs is not None:
                    prefill = where == PREFILL.name
                    share = _mbu(group[-1], labels, _combine(values, how), specs, mfu=prefill)
                    if share is not None:
                        (mfu if prefill else mbu).add(labels, share)
    return [finished, runs, *families, mbu, mfu]


def _run_order(record: dict[str, Any]) -> tuple[str, str]:
    """A point's runs oldest first: by start (else finish) time, then run id."""
    timings = record.get("timings") or {}
    started = timings.get("started_at") or timings.get("finished_at") or ""
    return (str(started), str(record.get("run_id", "")))


def _combine(values: list[float], how: str) -> float:
    """One point's runs (oldest first) as one sample: a rate or a latency at its current
    level, the one meaning of "best" every answer shares (`query.level.current_level`: the
    mean of the newest segment, a step inside the sweep's rounds leaving the old level
    out), a millisecond metric in seconds; a temperature at its maximum."""
    if how == "max":
        return max(values)
    level = current_level(values)
    assert level is not None  # values is not empty
    return level.value / 1000.0 if how == "median_ms" else level.value


def collect(view: SweepView) -> list[MetricFamily]:
    """Read the sweep from disk and turn it into metric families, each series once."""
    schedule = view.schedule()
    records = list(view.records())
    device = _device_families(view, schedule, records)
    points = _point_families(records, _Specs(view.store))
    # The order scrapes have always had: device state, outcomes, in flight, then points.
    return [*device[:5], points[0], *device[5:], *points[1:]]


def _summary(telemetry: dict[str, Any], key: str, stat: str) -> float | None:
    """Telemetry summaries are {key: {min, median, max}} or a bare number; anything else is None."""
    value = telemetry.get(key)
    if isinstance(value, dict):
        value = value.get(stat)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def scrape(sweep_dir: Path) -> str:
    return render(collect(SweepView(sweep_dir)))


class _Handler(PrereadHandler):
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


IDLE_TIMEOUT_S = HEAD_TIMEOUT_S
"""How long a connection has, from accept, to send a complete request before it is closed."""


class MetricsServer(BoundedHTTPServer):
    """The exporter's bounded server (benchlab.observe.server); `idle_timeout_s` is the
    deadline for a whole request head, counted from accept."""

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[PrereadHandler],
        *,
        workers: int = WORKERS,
        idle_timeout_s: float = IDLE_TIMEOUT_S,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        super().__init__(
            address,
            handler,
            workers=workers,
            head_timeout_s=idle_timeout_s,
            max_connections=max_connections,
        )
        self.idle_timeout_s = idle_timeout_s


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
