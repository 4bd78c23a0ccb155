"""Onboarding: real sysinfo through the agent, nvidia-smi answers replayed, the checklist."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.kit.catalog import catalog_doc

from benchlab.cli import main
from benchlab.layout import Store, atomic_write_json, read_json

NVIDIA = Path(__file__).resolve().parents[1] / "data" / "nvidia_smi"


def fake_nvidia_smi(bin_dir: Path, scenario: str) -> None:
    """A stand-in nvidia-smi that replays a recorded answer (see tests/data/nvidia_smi)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = {
        "570": f'cat "{NVIDIA}/query-570.csv"',
        "470": (
            'case "$*" in *compute_cap*) '
            f'cat "{NVIDIA}/query-470-no-compute-cap.txt"; exit 2;; esac; '
            f'cat "{NVIDIA}/query-470.csv"'
        ),
        "failed": f'cat "{NVIDIA}/failed.txt"; exit 9',
    }[scenario]
    tool = bin_dir / "nvidia-smi"
    tool.write_text(f"#!/bin/sh\n{script}\n")
    tool.chmod(0o755)


def sysinfo(bin_dir: Path) -> dict:
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    done = subprocess.run(
        [sys.executable, "-m", "benchlab.agent", "sysinfo"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    )
    return json.loads(done.stdout)


def test_two_gpus_with_compute_capability(tmp_path: Path) -> None:
    fake_nvidia_smi(tmp_path / "bin", "570")
    info = sysinfo(tmp_path / "bin")
    assert [(g["model"], g["compute_capability"]) for g in info["gpus"]] == [
        ("NVIDIA TITAN V", "7.0"),
        ("NVIDIA RTX 5880 Ada Generation", "8.9"),
    ]
    assert info["gpus"][0]["memory_gb"] == 12.0
    assert info["runtimes"]["cuda_driver_version"] == "570.86.15"


def test_an_old_driver_without_compute_cap_falls_back(tmp_path: Path) -> None:
    fake_nvidia_smi(tmp_path / "bin", "470")
    info = sysinfo(tmp_path / "bin")
    [gpu] = info["gpus"]
    assert gpu["model"] == "Tesla V100-SXM2-16GB"
    assert gpu["driver_version"] == "470.182.03"
    assert gpu.get("compute_capability") is None
    assert info["gpu_error"] is None


def test_a_failing_nvidia_smi_is_an_error_not_no_gpu(tmp_path: Path) -> None:
    fake_nvidia_smi(tmp_path / "bin", "failed")
    info = sysinfo(tmp_path / "bin")
    assert info["gpus"] is None
    assert "couldn't communicate with the NVIDIA driver" in info["gpu_error"]


@pytest.fixture
def onboarded(store: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    assert (
        main(["onboard", "--machine-id", "box1", "--tags", "cpu,linux", "--cost-per-hour", "0.25"])
        == 0
    )
    return store


@pytest.mark.slow
def test_onboarding_writes_private_and_redacted_specs_and_smoke_runs(onboarded: Path) -> None:
    layout = Store(onboarded)
    private = read_json(layout.private_specs("box1"))
    public = read_json(layout.public_specs("box1"))
    assert private["hostname"]
    assert "hostname" not in public
    assert private["hostname"] not in json.dumps(public)
    assert public["tags"] == ["cpu", "linux"] and public["cost_per_hour"] == 0.25
    catalog = catalog_doc(layout.catalog_path)
    [smoke] = [e for e in catalog["runs"] if e["machine_id"] == "box1"]
    assert smoke["status"] == "ok" and "smoke" in smoke["tags"]
    assert "box1" in read_json(layout.inventory_path)["machines"]


@pytest.mark.slow
def test_checklist_lines_and_machines_listing(
    onboarded: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["machines", "--format", "json"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert row["machine"] == "box1"
    assert row["specs"] and row["fields"] and row["smoke"] and row["catalog"]
    assert not row["full_run"] and not row["comparison"] and not row["ready"]


@pytest.mark.slow
def test_a_gpu_probe_that_failed_fails_the_fields_check(onboarded: Path) -> None:
    from benchlab.machines.onboard import checklist

    layout = Store(onboarded)
    specs = read_json(layout.private_specs("box1"))
    specs["hardware"]["gpu_error"] = "nvidia-smi exited 9: couldn't communicate"
    atomic_write_json(layout.private_specs("box1"), specs)
    fields = {c.key: c for c in checklist(layout, "box1")}["fields"]
    assert not fields.passed and "GPU" in fields.detail


@pytest.mark.slow
def test_interactive_onboarding_reads_answers(store: Path) -> None:
    env = {**os.environ, "BENCHLAB_STORE": str(store)}
    done = subprocess.run(
        [sys.executable, "-m", "benchlab", "onboard", "--interactive", "--no-smoke"],
        input="Lab Box 2\ngpu, lab\n1.5\n",
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    specs = read_json(Store(store).public_specs("lab-box-2"))
    assert specs["tags"] == ["gpu", "lab"] and specs["cost_per_hour"] == 1.5


def test_bad_arguments_are_one_line(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--store", str(store), "onboard", "--device", "pi5"]) == 2
    assert main(["--store", str(store), "onboard", "--machine-id", "../up"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "--config" in err[0] and "unsafe machine id" in err[1]
