"""What a run used: peak memory of the real child, energy from fake and real counters.

The fake machine is a sysfs tree under a temp root (BENCHLAB_SYSFS_ROOT) and stand-in
tools on PATH; the child processes and the agent are real.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from tests.agent.fakes import (
    NVIDIA_SMI,
    PMIC_ADC,
    fake_machine,
    only,
    rapl_zone,
    tool,
    vcgencmd,
)

from benchlab.agent import runner as runner_module
from benchlab.agent.runner import peak_rss_mb, run_task
from benchlab.agent.telemetry import Probes, Sampler, energy_summary, parse_pmic, vm_hwm_mb
from benchlab.metrics import resource_metrics

ALLOC_50MB = "b = b'x' * (50 << 20); import time; time.sleep(0.3); print(len(b))"
SMALL = "import time; time.sleep(0.3)"


def run_python(code: str, **task: object) -> dict:
    return run_task(
        {"argv": ["{python}", "-c", code], "sample_interval_s": 0.05, **task},
        python=sys.executable,
        agent="unused",
    )


# --- memory ---------------------------------------------------------------------------------


def test_peak_rss_of_a_child_that_allocates_50_mb_then_of_a_small_one():
    big = run_python(ALLOC_50MB)
    assert big["exit_code"] == 0
    used = big["resources"]
    # wait4 where the child outgrew this process, else the VmHWM sampled every 0.05 s.
    assert used["peak_rss_source"] in ("wait4", "VmHWM")
    # 50 MiB of bytes plus an interpreter (~10 MiB): not the KiB figure, not bytes.
    assert 50 <= used["peak_rss_mb"] <= 150
    # A fresh measure per run: RUSAGE_CHILDREN would still say the 50 MB child's peak.
    small = run_python(SMALL)["resources"]
    assert 1 <= small["peak_rss_mb"] < 40


def test_an_agent_that_grows_while_it_starts_the_child_is_not_taken_for_the_child(monkeypatch):
    # The fork copies the agent as it is at that moment; 120 MiB more than it had when
    # the run began must still be read as the agent's pages, not the small child's.
    held: list[bytes] = []
    start = runner_module._Popen.__init__

    def grow_then_start(self, *args, **kwargs):
        held.append(b"y" * (120 << 20))
        start(self, *args, **kwargs)

    monkeypatch.setattr(runner_module._Popen, "__init__", grow_then_start)
    small = run_python(SMALL)["resources"]
    assert held
    assert 1 <= small["peak_rss_mb"] < 40


def test_sampled_vmhwm_stands_in_where_wait4_cannot_say():
    assert peak_rss_mb(None, 12.5) == (12.5, "VmHWM")
    # wait4 no larger than the agent's own peak may be the agent's pages (vfork): sampled.
    kib = SimpleNamespace(ru_maxrss=40 * 1024)
    if sys.platform != "darwin":
        assert peak_rss_mb(kib, 9.5, own_mb=44.0) == (9.5, "VmHWM")
        assert peak_rss_mb(kib, 9.5, own_mb=20.0) == (40.0, "wait4")
        # The agent's own 153.262 MiB, rounded up to 153.3 in the figure, is still the agent's.
        inherited = SimpleNamespace(ru_maxrss=156940)
        assert peak_rss_mb(inherited, 9.5, own_mb=round(156940 / 1024, 2)) == (9.5, "VmHWM")
    assert peak_rss_mb(SimpleNamespace(ru_maxrss=0), None) == (None, None)
    assert peak_rss_mb(SimpleNamespace(ru_maxrss=2048), None) == (
        (0.0, "wait4") if sys.platform == "darwin" else (2.0, "wait4")
    )
    assert (vm_hwm_mb(os.getpid()) or 0) > 1
    assert vm_hwm_mb(2**22 + 12345) is None  # no such process


def test_a_command_that_cannot_start_has_no_peak_memory():
    envelope = run_task({"argv": ["/no/such/benchmark"]}, python=sys.executable, agent="unused")
    assert envelope["exit_code"] == 127
    assert "peak_rss_mb" not in envelope["resources"]


# --- energy ---------------------------------------------------------------------------------


def test_rapl_energy_adds_intervals_across_a_counter_wrap(tmp_path: Path):
    max_uj = 262_143_328_850
    package = rapl_zone(tmp_path, "intel-rapl:0", max_uj - 1_000_000, max_uj)
    rapl_zone(tmp_path, "intel-rapl:0:0", 5, max_uj)  # a subzone: inside the package already
    psys = rapl_zone(tmp_path, "intel-rapl:1", 7, max_uj)  # the platform: holds the package
    (psys.parent / "name").write_text("psys\n")
    probes = Probes(str(tmp_path), path="")
    assert probes.sources()["power"] == "rapl"
    assert probes.power(10.0) is None  # a rate needs two readings
    package.write_text("2000000\n")  # wrapped: 1 J to the top, 2 J after
    psys.write_text("9000007\n")  # would add 9 J if it were counted
    assert probes.power(11.0) == 3.0
    package.write_text("2500000\n")
    assert probes.power(12.0) == 0.5
    assert probes.rapl_joules == pytest.approx(3.5)
    assert energy_summary({}, probes.rapl_joules) == {
        "rapl_j": 3.5,
        "total_j": 3.5,
        "sources": ["rapl"],
    }


def test_rapl_energy_of_a_real_run_whose_counter_wraps(tmp_path: Path, monkeypatch):
    """The child advances the fake counter past its wrap while the agent samples."""
    max_uj = 10_000_000
    package = rapl_zone(tmp_path, "intel-rapl:0", max_uj - 1_000_000, max_uj)
    fake_machine(tmp_path)
    monkeypatch.setenv("BENCHLAB_SYSFS_ROOT", str(tmp_path))
    monkeypatch.setenv("PATH", only(tmp_path / "bin"))
    code = (
        "import os, time; time.sleep(0.2); "
        f"open({str(package)!r} + '.new', 'w').write('2000000'); "
        f"os.replace({str(package)!r} + '.new', {str(package)!r}); time.sleep(0.2)"
    )
    envelope = run_python(code)
    assert envelope["exit_code"] == 0
    assert envelope["resources"]["energy_j"] == pytest.approx(3.0)
    assert envelope["resources"]["energy_sources"] == ["rapl"]
    assert envelope["telemetry"]["energy"]["rapl_j"] == pytest.approx(3.0)


def test_nvidia_power_is_integrated_and_gpu_memory_peaks(tmp_path: Path, monkeypatch):
    tool(tmp_path / "bin", "nvidia-smi", NVIDIA_SMI)
    monkeypatch.setenv("BENCHLAB_SYSFS_ROOT", str(fake_machine(tmp_path / "root")))
    monkeypatch.setenv("PATH", only(tmp_path / "bin"))
    envelope = run_python("import time; time.sleep(0.4)")
    samples = envelope["telemetry"]["samples"]
    span = samples[-1]["t_s"] - samples[0]["t_s"]
    used = envelope["resources"]
    assert used["gpu_mem_peak_mb"] == 3072.0  # both GPUs' memory in use
    assert used["energy_sources"] == ["gpu"]
    assert used["energy_j"] == pytest.approx(150.0 * span, rel=0.01)
    assert envelope["telemetry"]["gpu_power_w"]["max"] == 150.0


def test_pi5_pmic_power_is_integrated_and_throttling_during_the_run_is_seen(
    tmp_path: Path, monkeypatch
):
    assert parse_pmic(PMIC_ADC) == pytest.approx(3.25)
    assert parse_pmic("no rails here") is None
    vcgencmd(tmp_path / "bin", tmp_path / "throttle-calls")
    monkeypatch.setenv("BENCHLAB_SYSFS_ROOT", str(fake_machine(tmp_path / "root")))
    monkeypatch.setenv("PATH", only(tmp_path / "bin"))
    envelope = run_python("import time; time.sleep(0.3)")
    samples = envelope["telemetry"]["samples"]
    span = samples[-1]["t_s"] - samples[0]["t_s"]
    assert envelope["resources"]["energy_sources"] == ["pmic"]
    assert envelope["resources"]["energy_j"] == pytest.approx(3.25 * span, rel=0.01)
    system = envelope["system"]
    assert system["pi_throttled"] == "0x0"
    assert system["during_run"]["throttled"] is True
    assert "under-voltage" in system["during_run"]["reasons"][0]


def test_no_counter_means_no_energy_never_zero(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("BENCHLAB_SYSFS_ROOT", str(fake_machine(tmp_path / "root")))
    monkeypatch.setenv("PATH", only(tmp_path / "empty-bin"))
    envelope = run_python(SMALL)
    assert envelope["telemetry"]["energy"] is None
    assert "energy_j" not in envelope["resources"]
    assert "gpu_mem_peak_mb" not in envelope["resources"]
    assert energy_summary({}, None) is None
    metrics = resource_metrics(envelope["resources"], 1.0, 10.0)
    assert "energy_j" not in metrics and "joules_per_token" not in metrics
    assert metrics["peak_rss_mb"] > 0


def test_joules_per_token_is_mean_power_over_decode_rate():
    metrics = resource_metrics({"energy_j": 30.0, "peak_rss_mb": 80.0}, 2.0, 5.0)
    assert metrics == {"energy_j": 30.0, "peak_rss_mb": 80.0, "joules_per_token": 3.0}
    assert "joules_per_token" not in resource_metrics({"energy_j": 30.0}, 2.0, None)


def test_real_rapl_counter_where_this_machine_has_one():
    zones = sorted(Path("/sys/class/powercap").glob("intel-rapl:[0-9]*/energy_uj"))
    readable = [z for z in zones if os.access(z, os.R_OK)]
    if not readable:
        pytest.skip("no readable RAPL counter here (none exposed, or root-only)")
    sampler = Sampler(0.05, root="/")
    sampler.start()
    sum(i * i for i in range(2_000_000))
    summary = sampler.stop()
    assert summary["energy"] is not None and summary["energy"]["rapl_j"] > 0


def test_real_nvidia_smi_where_this_machine_has_one():
    if shutil.which("nvidia-smi") is None:
        pytest.skip("no nvidia-smi on this machine")
    envelope = run_python("import time; time.sleep(0.5)")
    assert envelope["resources"].get("gpu_mem_peak_mb", 0) >= 0
    assert envelope["telemetry"]["sources"]["gpu"] == "nvidia-smi"
