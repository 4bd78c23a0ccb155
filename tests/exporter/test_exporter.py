"""Metrics of a sweep directory, read from disk: content, labels, promtool, HTTP."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from tests.kit.oracle import promtool_accepts
from tests.kit.runs import write_run

from benchlab.cli import main
from benchlab.layout import Store, atomic_write_json
from benchlab.models import Status
from benchlab.observe.exporter import scrape, serve_in_background

STAMP = "20261201T000000Z"


def _record(store: Store, device: str, threads: int, status: Status = "ok") -> None:
    """One point of the `lab` sweep, as the runner leaves it: q8 decode at `threads`."""
    write_run(
        store.root,
        f"{device}-tiny-q8-decode-t{threads}-{STAMP}",
        machine_id=device,
        model="tiny",
        precision="q8",
        mode="decode",
        experiment="lab",
        threads=threads,
        prompt_tokens=128,
        gen_tokens=64,
        prefill=[(128, 1000 * 128 / (50.0 * threads), 50.0 * threads)],
        decode=10.0 * threads,
        decode_ms=None,
        batch=(),
        status=status,
        telemetry={"power_w": {"median": 7.5}, "temperature_c": {"max": 61.0}},
    )


@pytest.fixture
def sweep_dir(store: Path) -> Path:
    layout = Store(store)
    sweep = layout.sweep_dir("lab")
    atomic_write_json(
        sweep / "state.json",
        {
            "$schema": "benchmark/sweep-state.v1",
            "experiment": "lab",
            "stamp": STAMP,
            "started_at": "2026-12-01T00:00:00Z",
        },
    )
    atomic_write_json(
        sweep / "schedule.json",
        {
            "devices": {
                "laptop": {"breaker": {"state": "closed", "trips": []}, "outcomes": {"ok": 2}},
                "pi5": {"breaker": {"state": "open", "trips": [{"opened_at": "x"}] * 2}},
            },
            "clocks": {
                "laptop": {"offset_s": 0.0004, "uncertainty_s": 0.002, "agreeing": True},
                "pi5": {"offset_s": 12.5, "uncertainty_s": 0.01, "agreeing": False},
            },
        },
    )
    (sweep / "in_flight.json").write_text('{"laptop": 1, "pi5": 0}\n')
    atomic_write_json(
        layout.private_specs("laptop"),
        {"hardware": {"cgroup_cpu": {"quota_cores": 1.5}, "cpu": {"cores_logical": 2}}},
    )
    (sweep / "retries.jsonl").write_text(
        '{"device": "pi5", "kind": "transport", "error": "ssh: link down"}\n'
        '{"device": "pi5", "kind": "transport", "error": "ssh: link down"}\n'
        '{"device": "pi5", "kind": "failover", "to": "pi5-spare"}\n'
        '{"device": "pi5", "kind": "transp'  # a line being appended right now
    )
    _record(layout, "laptop", threads=1)
    _record(layout, "laptop", threads=4)
    _record(layout, "pi5", threads=1, status="failed")
    # A record of another sweep (other stamp) is not this sweep's.
    atomic_write_json(
        layout.run_dir("laptop", "old-20250101T000000Z") / "record.json",
        {"run_id": "old", "experiment": "lab", "status": "ok", "device": "laptop"},
    )
    return sweep


def _samples(parsed: dict, name: str) -> list[tuple[dict[str, str], float]]:
    return parsed[name]["samples"]


def test_points_differing_in_one_swept_axis_are_two_series(sweep_dir: Path, prom_parse) -> None:
    parsed = prom_parse(scrape(sweep_dir))
    decode = _samples(parsed, "benchlab_point_decode_tokens_per_second")
    assert sorted((labels["threads"], value) for labels, value in decode) == [
        ("1", 10.0),
        ("4", 40.0),
    ]
    assert set(decode[0][0]) == {
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
    }
    assert decode[0][0]["shape"] == "p128/n64"
    for labels, _ in decode:
        assert STAMP not in "".join(labels.values()), "run ids and stamps are never labels"


def test_device_state_clock_outcomes_and_failures(sweep_dir: Path, prom_parse) -> None:
    parsed = prom_parse(scrape(sweep_dir))
    assert dict((s[0]["device"], s[1]) for s in _samples(parsed, "benchlab_device_up")) == {
        "laptop": 1.0,
        "pi5": 0.0,
    }
    offsets = {s[0]["device"]: s[1] for s in _samples(parsed, "benchlab_clock_offset_seconds")}
    assert offsets == {"laptop": 0.0004, "pi5": 12.5}
    finished = {
        (s[0]["device"], s[0]["status"], s[0]["failure_kind"]): s[1]
        for s in _samples(parsed, "benchlab_runs_finished")
    }
    assert finished == {("laptop", "ok", ""): 2.0, ("pi5", "failed", "measurement"): 1.0}
    failures = _samples(parsed, "benchlab_transport_failures")
    assert failures == [({"machine": "pi5", "device": "pi5"}, 2.0)]
    assert _samples(parsed, "benchlab_point_power_watts")[0][1] == 7.5
    in_flight = {s[0]["device"]: s[1] for s in _samples(parsed, "benchlab_runs_in_flight")}
    assert in_flight == {"laptop": 1.0, "pi5": 0.0}
    assert _samples(parsed, "benchlab_cpu_quota_cores") == [
        ({"machine": "laptop", "device": "laptop"}, 1.5)
    ]
    trips = {s[0]["device"]: s[1] for s in _samples(parsed, "benchlab_breaker_trips")}
    assert trips == {"laptop": 0.0, "pi5": 2.0}


def test_promtool_accepts_the_output(sweep_dir: Path) -> None:
    promtool_accepts(scrape(sweep_dir))


def test_scrape_over_http_on_loopback_reads_disk_each_time(sweep_dir: Path, prom_parse) -> None:
    server = serve_in_background(sweep_dir, 0)
    try:
        host, port = server.server_address[:2]
        url = f"http://{host}:{port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as response:
            assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            first = prom_parse(response.read().decode())
        assert len(_samples(first, "benchlab_point_decode_tokens_per_second")) == 2
        _record(Store(sweep_dir.parents[2]), "laptop", threads=8)
        with urllib.request.urlopen(url, timeout=5) as response:
            second = prom_parse(response.read().decode())
        assert len(_samples(second, "benchlab_point_decode_tokens_per_second")) == 3
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(f"http://{host}:{port}/nope", timeout=5)
    finally:
        server.shutdown()
        server.server_close()


def test_cli_prints_one_scrape(sweep_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", str(sweep_dir)]) == 0
    assert "# TYPE benchlab_device_up gauge" in capsys.readouterr().out


def test_cli_refuses_a_directory_that_is_not_a_sweep(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["export", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a sweep directory" in err


def test_cpu_quota_comes_from_the_devices_machine(sweep_dir: Path, prom_parse) -> None:
    """A device id is not a machine id: the pod `pi5` runs on machine `rack-3` here."""
    layout = Store(sweep_dir.parents[2])
    for record_path in layout.by_machine.glob(f"pi5/*-{STAMP}/record.json"):
        record = json.loads(record_path.read_text())
        record["machine_id"] = "rack-3"
        atomic_write_json(layout.run_dir("rack-3", record["run_id"]) / "record.json", record)
        record_path.unlink()
    atomic_write_json(layout.private_specs("rack-3"), {"hardware": {"cpu": {"cores_logical": 4}}})
    quota = dict(
        (labels["device"], value)
        for labels, value in _samples(prom_parse(scrape(sweep_dir)), "benchlab_cpu_quota_cores")
    )
    assert quota == {"laptop": 1.5, "pi5": 4.0}


def test_mbu_per_point_where_the_machine_has_a_bandwidth_figure(
    sweep_dir: Path, prom_parse, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SmolLM2-135M f32 reads 537,919,488 bytes of weights per token (the reference decoder's
    own count) plus its f32 KV cache; at 20 t/s on a declared 20 GB/s that is 53.8%. The
    laptop (specs without a figure) and the tiny model (weights that fit in cache) get no
    sample at all: never a 0."""
    store = sweep_dir.parents[2]
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    assert main(["machines", "set", "pi5", "--mem-bandwidth", "20"]) == 0
    points = (("pi5", "smollm2-135m"), ("laptop", "smollm2-135m"), ("pi5", "tiny"))
    for machine, model in points:
        write_run(
            store,
            f"{machine}-{model}-f32-decode-t4-{STAMP}",
            machine_id=machine,
            model=model,
            precision="f32",
            mode="decode",
            experiment="lab",
            threads=4,
            prompt_tokens=32,
            gen_tokens=16,
            decode=20.0,
            decode_ms=None,
            batch=(),
        )
    text = scrape(sweep_dir)
    [(labels, value)] = _samples(prom_parse(text), "benchlab_point_mbu_percent")
    assert (labels["machine"], labels["model"], labels["quantisation"]) == (
        "pi5", "smollm2-135m", "f32"
    )  # fmt: skip
    kv = 2 * 30 * 3 * 64 * 4 * (32 + 16 // 2)  # K and V, 30 layers, 3 heads of 64, f32
    assert value == pytest.approx(round(20.0 * (537_919_488 + kv) / 20e9 * 100, 1))
    assert 0 < value <= 100
    promtool_accepts(text, optional=True)


def test_mfu_per_point_where_the_machine_has_a_peak_compute_figure(
    sweep_dir: Path, prom_parse, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SmolLM2-135M's prefill costs 2 x its parameters plus its attention over the prompt's
    mean context (the reference decoder's shape is known) a token; at 500 t/s on a declared
    1 TFLOP/s that is its MFU. The laptop (no figure) gets no sample: never a 0."""
    from benchlab.agent.reference_bench import MODELS, parameter_count

    store = sweep_dir.parents[2]
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    assert main(["machines", "set", "pi5", "--peak-tflops", "1"]) == 0
    for machine in ("pi5", "laptop"):
        write_run(
            store,
            f"{machine}-smollm2-135m-f32-decode-t4-{STAMP}",
            machine_id=machine,
            model="smollm2-135m",
            precision="f32",
            mode="decode",
            experiment="lab",
            threads=4,
            prompt_tokens=32,
            gen_tokens=16,
            prefill=[(32, 1000 * 32 / 500.0, 500.0)],
            decode=20.0,
            decode_ms=None,
            batch=(),
        )
    text = scrape(sweep_dir)
    [(labels, value)] = _samples(prom_parse(text), "benchlab_point_mfu_percent")
    assert (labels["machine"], labels["model"]) == ("pi5", "smollm2-135m")
    shape = MODELS["smollm2-135m"]
    attention = 4 * shape["layers"] * shape["hidden"] * (32 + 1) / 2  # heads x head_dim
    flops = 2 * parameter_count(shape) + attention
    assert value == pytest.approx(round(500.0 * flops / 1e12 * 100, 1))
    assert 0 < value <= 100
    promtool_accepts(text, optional=True)
