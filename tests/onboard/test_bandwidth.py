"""Memory bandwidth per machine (ARCHITECTURE.md, "How close to the hardware"): the agent's
probe run for real, the spec-sheet table, and the figures `bench machines` records."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchlab.agent.membw import measure, working_set
from benchlab.cli import main
from benchlab.layout import Store, read_json
from benchlab.machines.bandwidth import better, declared, from_spec_sheet, spec_sheet
from benchlab.models import BandwidthFigure


def test_the_agent_verb_measures_a_copy_through_memory() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchlab.agent", "membw"],
        input=json.dumps({"size_bytes": 32 << 20, "threads": 2}),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    answer = json.loads(done.stdout)
    # Any machine that runs a test suite moves more than 0.5 GB/s and less than a
    # data-centre GPU's HBM; a figure outside that is a unit or timing mistake.
    assert 0.5 < answer["gbs"] < 10_000
    assert answer["method"] == "stdlib-memmove-copy" and answer["working_set_mib"] == 32
    assert answer["threads"] == 2 and answer["repeats"] >= 1


def test_the_agent_refuses_a_nonsense_size() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchlab.agent", "membw"],
        input=json.dumps({"size_bytes": -1}),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1 and "positive integers" in json.loads(done.stdout)["error"]


def test_the_working_set_leaves_the_cache_and_never_crowds_memory() -> None:
    assert working_set(32 << 20, 64 << 30) == 128 << 20  # 4 x LLC
    assert working_set(1 << 20, 64 << 30) == 64 << 20  # at least 64 MiB
    assert working_set(256 << 20, 2 << 30) == 256 << 20  # both buffers <= 1/4 of 2 GiB
    assert working_set(None, 256 << 20) == 32 << 20
    assert measure(size=16 << 20, threads=1, repeats=1)["repeats"] == 1


@pytest.mark.parametrize(
    ("name", "key", "gbs"),
    [
        ("NVIDIA GeForce RTX 4090", "rtx 4090", 1008),
        ("NVIDIA GeForce RTX 4070 Ti SUPER", "rtx 4070 ti super", 672),
        ("NVIDIA GeForce RTX 4070", "rtx 4070", 504),
        ("NVIDIA A100-SXM4-80GB", "a100-sxm4-80gb", 2039),
        ("NVIDIA H100 80GB HBM3", "h100 80gb hbm3", 3350),
        ("AMD Radeon RX 7900 XTX", "rx 7900 xtx", 960),
        ("AMD Instinct MI300X", "instinct mi300x", 5300),
        ("Intel(R) Arc(TM) A770 Graphics", "arc a770", 560),
        ("Apple M2 Max", "apple m2 max", 400),
        ("Apple M4", "apple m4", 120),
        ("Raspberry Pi 5 Model B Rev 1.0", "raspberry pi 5", 17.1),
        ("NVIDIA Jetson AGX Orin", "jetson agx orin", 204.8),
    ],
)
def test_spec_sheet_names_as_tools_print_them(name: str, key: str, gbs: float) -> None:
    assert spec_sheet(name) == (key, gbs)


@pytest.mark.parametrize(
    "name", ["NVIDIA GeForce RTX 4090 Laptop GPU", "Intel(R) Xeon(R) Gold 6338", "", None]
)
def test_no_figure_is_better_than_a_wrong_one(name: str | None) -> None:
    assert from_spec_sheet(name) is None


def test_a_declared_figure_outranks_a_probe_and_a_probe_the_spec_sheet() -> None:
    spec = from_spec_sheet("Apple M2")
    probe = BandwidthFigure(gbs=90.0, source="measured", date="2026-12-01T00:00:00Z")
    person = declared(100.0, date="2026-11-01T00:00:00Z")
    assert better(spec, probe) == probe and better(probe, spec) == probe
    assert better(person, probe) == person and better(probe, person) == person
    assert better(None, spec) == spec and better(spec, None) == spec


def test_machines_set_and_list(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    assert main(["machines", "set", "m2-studio", "--mem-bandwidth", "400"]) == 0
    specs = read_json(Store(store).private_specs("m2-studio"))
    assert specs["hardware"]["mem_bandwidth"]["source"] == "declared"
    assert specs["hardware"]["mem_bandwidth"]["gbs"] == 400
    capsys.readouterr()
    assert main(["machines", "--format", "json"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert row["machine"] == "m2-studio" and row["mem_bandwidth"]["gbs"] == 400
    assert main(["machines", "set", "m2-studio", "--mem-bandwidth", "-3"]) == 2
    assert main(["machines", "set", "m2-studio", "--mem-bandwidth", "9", "--gpu"]) == 2
    assert "specs list no GPU" in capsys.readouterr().err


def test_machines_measure_records_the_probe(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    assert main(["machines", "measure", "--machine-id", "box1", "--format", "json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["mem_bandwidth"]["source"] == "measured" and answer["mem_bandwidth"]["gbs"] > 0
    figure = read_json(Store(store).private_specs("box1"))["hardware"]["mem_bandwidth"]
    assert figure == answer["mem_bandwidth"]


@pytest.mark.slow
def test_onboarding_measures_and_keeps_a_declared_figure(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    monkeypatch.setenv("BENCHLAB_BANDWIDTH_PROBE", "on")
    assert main(["onboard", "--machine-id", "box1", "--no-smoke"]) == 0
    layout = Store(store)
    figure = read_json(layout.private_specs("box1"))["hardware"]["mem_bandwidth"]
    assert figure["source"] == "measured"
    public = read_json(layout.public_specs("box1"))["hardware"]["mem_bandwidth"]
    assert public["gbs"] == figure["gbs"]
    assert main(["machines", "set", "box1", "--mem-bandwidth", "55.5"]) == 0
    assert main(["onboard", "--machine-id", "box1", "--no-smoke"]) == 0
    kept = read_json(layout.private_specs("box1"))["hardware"]["mem_bandwidth"]
    assert kept["source"] == "declared" and kept["gbs"] == 55.5
    capsys.readouterr()
    assert main(["system"]) == 0  # .bench-machine-id names box1
    [line] = [x for x in capsys.readouterr().out.splitlines() if x.startswith("memory bandwidth")]
    assert line.split(None, 2)[2].startswith("55.5 GB/s (declared ")


def test_system_says_not_measured_and_reads_the_default_sweeps_machine(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BENCHLAB_STORE", str(store))

    def shown() -> str:
        capsys.readouterr()
        assert main(["system"]) == 0
        out = capsys.readouterr().out.splitlines()
        [line] = [x for x in out if x.startswith("memory bandwidth")]
        return line.split(None, 2)[2]

    assert shown() == "not measured (bench machines measure)"  # never 0
    # No .bench-machine-id: the figure of `local`, the machine the default sweep runs here.
    assert main(["machines", "set", "local", "--mem-bandwidth", "16.3"]) == 0
    assert shown().startswith("16.3 GB/s (declared ")
