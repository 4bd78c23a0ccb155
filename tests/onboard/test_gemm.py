"""Measured peak compute (ARCHITECTURE.md, "How close to the hardware"): the agent's `gemm`
probe run for real, with numpy and without it, and the figure onboarding and `bench
machines measure` record beside the bandwidth."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchlab.cli import main
from benchlab.layout import Store, read_json
from benchlab.machines.bandwidth import better
from benchlab.machines.compute import declared, label, measured, peak_compute
from benchlab.models import ComputeFigure, MachineSpecs

NO_NUMPY = "import sys\nsys.modules['numpy'] = None  # `import numpy` raises ImportError\n"


@pytest.fixture
def numpy_blocked(tmp_path: Path) -> dict[str, str]:
    """An environment whose Python cannot import numpy: a sitecustomize first on the path
    blocks it, in every interpreter started with it (the agent's, too)."""
    blocker = tmp_path / "no-numpy"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(NO_NUMPY)
    path = os.pathsep.join(p for p in (str(blocker), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path}


def _agent(payload: dict[str, Any], env: dict[str, str] | None = None) -> tuple[int, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "benchlab.agent", "gemm"],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )
    [line] = done.stdout.splitlines()
    return done.returncode, json.loads(line)


def test_the_agent_verb_times_a_float32_gemm() -> None:
    status, answer = _agent({})
    assert status == 0, answer
    # Any machine that runs a test suite multiplies faster than 1 GFLOP/s and slower than
    # a petaflop; a figure outside that is a unit or timing mistake.
    assert 0.001 < answer["tflops"] < 1000
    assert answer["method"].startswith(f"numpy float32 CPU GEMM n={answer['n']}, best of ")
    assert answer["n"] in (1024, 2048) and answer["repeats"] >= 1 and answer["threads"] >= 1
    figure = measured(answer)
    assert figure.source == "measured" and figure.tflops == answer["tflops"]


def test_the_agent_refuses_nonsense_and_answers_not_available_without_numpy(
    numpy_blocked: dict[str, str],
) -> None:
    payloads: list[dict[str, Any]] = [{"n": 0}, {"n": 1 << 20}, {"repeats": "5"}, {"n": True}]
    for payload in payloads:
        status, answer = _agent(payload)
        assert status == 1 and answer["error"].startswith("gemm: n must be an integer"), payload
    status, answer = _agent({"n": 64}, numpy_blocked)
    assert status == 1 and answer == {"error": "gemm: not available: numpy is not installed"}


def test_a_figure_is_a_positive_rate_and_ranks_like_the_bandwidth() -> None:
    answers: list[dict[str, object]] = [{}, {"tflops": 0}, {"tflops": -1.0}, {"tflops": True}]
    answers.append({"error": "x"})
    for answer in answers:
        with pytest.raises(ValueError, match="gemm answered no usable figure"):
            measured(answer)
    probe = measured({"tflops": 0.19, "method": "numpy float32 CPU GEMM n=2048, best of 5"})
    person = declared(2.0)
    assert better(person, probe) is person and better(probe, person) is person
    newer = measured({"tflops": 0.2})
    assert better(probe, newer) is newer and better(None, probe) is probe
    spec = ComputeFigure(tflops=10.4, source="spec", method="spec sheet: apple m1 max")
    assert better(probe, spec) is probe
    assert label(probe).startswith("0.19 TFLOP/s (measured 20") and "float32 CPU GEMM" in label(
        probe
    )


def test_a_measured_figure_judges_cpu_runs_never_an_socs_gpu() -> None:
    probe = measured({"tflops": 0.5})
    specs = MachineSpecs.model_validate(
        {
            "machine_id": "m1",
            "registered_at": "2026-12-06T00:00:00Z",
            "hardware": {"cpu": {"model": "Apple M1 Max"}, "peak_tflops": probe.model_dump()},
            "os": {"name": "macOS"},
        }
    )
    cpu = peak_compute(specs, on_gpu=False)
    assert cpu is not None and cpu.figure == probe
    # A Metal run computed on the SoC's GPU: the CPU's GEMM rate says nothing about it.
    gpu = peak_compute(specs, on_gpu=True)
    assert gpu is not None and gpu.figure.source == "spec" and gpu.figure.tflops == 10.4


def test_machines_measure_records_no_compute_figure_without_numpy(
    store: Path,
    numpy_blocked: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    monkeypatch.setenv("PYTHONPATH", numpy_blocked["PYTHONPATH"])  # the agent's interpreter
    assert main(["machines", "measure", "--machine-id", "box1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("box1: memory ") and "(measured " in out[0]
    assert out[1].startswith("box1: compute not measured (") and "numpy is not installed" in out[1]
    hardware = read_json(Store(store).private_specs("box1"))["hardware"]
    assert hardware["mem_bandwidth"]["source"] == "measured"
    assert hardware.get("peak_tflops") is None  # never 0


@pytest.mark.slow
def test_onboarding_measures_compute_and_keeps_a_declared_figure(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    monkeypatch.setenv("BENCHLAB_BANDWIDTH_PROBE", "on")
    assert main(["onboard", "--machine-id", "box1", "--no-smoke"]) == 0
    layout = Store(store)
    figure = read_json(layout.private_specs("box1"))["hardware"]["peak_tflops"]
    assert figure["source"] == "measured" and figure["tflops"] > 0
    assert figure["method"].startswith("numpy float32 CPU GEMM")
    public = read_json(layout.public_specs("box1"))["hardware"]["peak_tflops"]
    assert public["tflops"] == figure["tflops"]
    capsys.readouterr()
    assert main(["system"]) == 0  # .bench-machine-id names box1
    [line] = [x for x in capsys.readouterr().out.splitlines() if x.startswith("peak compute")]
    assert "TFLOP/s (measured " in line and line.endswith(", float32 CPU GEMM)")
    assert main(["machines", "set", "box1", "--peak-tflops", "1.5"]) == 0
    assert main(["onboard", "--machine-id", "box1", "--no-smoke"]) == 0
    kept = read_json(layout.private_specs("box1"))["hardware"]["peak_tflops"]
    assert kept["source"] == "declared" and kept["tflops"] == 1.5
    capsys.readouterr()
    assert main(["machines", "--format", "json"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert row["peak_tflops"]["source"] == "declared"
