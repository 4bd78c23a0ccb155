"""The agent's verbs, run for real as child processes (module, zipapp, directory)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

TELEMETRY_KEYS = {
    "temperature_c",
    "cpu_freq_mhz",
    "load_1m",
    "power_w",
    "gpu_power_w",
    "gpu_temperature_c",
    "samples",
    "sources",
    "interval_s",
}


def test_clock_reports_its_own_start_and_finish(run_agent):
    before = time.time()
    status, answer, _ = run_agent("clock")
    after = time.time()
    assert status == 0
    assert set(answer) == {"started_at", "finished_at"}
    assert before <= answer["started_at"] <= answer["finished_at"] <= after


def test_sysinfo_describes_this_machine(run_agent):
    status, answer, _ = run_agent("sysinfo")
    assert status == 0
    assert {"cpu", "memory", "os", "runtimes", "gpus", "gpu_error", "cgroup", "storage"} <= set(
        answer
    )
    assert answer["cpu"]["cores_logical"] >= 1
    assert answer["memory"]["total_bytes"] > 0
    assert answer["runtimes"]["python_version"] == ".".join(map(str, sys.version_info[:3]))
    assert answer["cgroup"]["version"] in (1, 2, None)
    if answer["gpu_error"] is None:
        assert isinstance(answer["gpus"], list)


def test_sysinfo_failing_gpu_tool_is_an_error_not_none(run_agent, failing_tool_path):
    status, answer, _ = run_agent("sysinfo", env={"PATH": failing_tool_path})
    assert status == 0
    assert answer["gpus"] is None
    assert "nvidia-smi" in answer["gpu_error"]
    assert "exited 9" in answer["gpu_error"]


def test_exists_answers_yes_and_no(run_agent):
    assert run_agent("exists", {"kind": "binary", "name": "sh"})[1]["exists"] is True
    assert run_agent("exists", {"kind": "binary", "name": "no-such-bin-x1"})[1]["exists"] is False
    assert run_agent("exists", {"kind": "module", "name": "json"})[1]["exists"] is True
    assert run_agent("exists", {"kind": "module", "name": "no_such_mod_x1"})[1]["exists"] is False
    assert run_agent("exists", {"kind": "module", "name": "no_such_pkg.sub"})[1]["exists"] is False


def test_exists_raises_when_it_cannot_tell(run_agent, broken_package):
    status, answer, _ = run_agent(
        "exists",
        {"kind": "module", "name": "brokenpkg.sub"},
        env={"PYTHONPATH": str(broken_package)},
    )
    assert status != 0
    assert set(answer) == {"error"}
    assert "cannot tell" in answer["error"] and "half-installed" in answer["error"]


def test_exists_rejects_a_malformed_payload(run_agent):
    status, answer, _ = run_agent("exists", {"kind": "file", "name": "x"})
    assert status != 0 and "exists: payload" in answer["error"]


def test_unknown_verb_and_garbage_payload_fail_with_an_error_object(run_agent):
    status, answer, _ = run_agent("dance")
    assert status != 0 and "unknown verb" in answer["error"]
    status, answer, _ = run_agent("run", ["not", "an", "object"])
    assert status != 0 and "JSON object" in answer["error"]


def test_run_failing_command_comes_back_in_the_envelope(run_agent):
    task = {
        "argv": [
            "{python}",
            "-c",
            "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)",
        ],
        "sample_interval_s": 0.1,
    }
    status, envelope, _ = run_agent("run", task)
    assert status == 0
    assert envelope["exit_code"] == 3
    assert envelope["timed_out"] is False
    assert envelope["stdout"] == "out\n"
    assert envelope["stderr"] == "err\n"
    assert envelope["started_at"] <= envelope["finished_at"]
    assert TELEMETRY_KEYS <= set(envelope["telemetry"])
    assert len(envelope["telemetry"]["samples"]) >= 2
    assert envelope["telemetry"]["load_1m"]["max"] >= 0  # /proc/loadavg exists on Linux


def test_run_timeout_kills_the_task_and_its_children(run_agent):
    task = {"argv": ["sh", "-c", "sleep 30 & sleep 30"], "timeout_s": 0.5}
    t0 = time.monotonic()
    status, envelope, _ = run_agent("run", task, timeout=20)
    assert time.monotonic() - t0 < 10
    assert status == 0
    assert envelope["timed_out"] is True
    assert envelope["exit_code"] != 0


def test_run_command_that_cannot_start(run_agent):
    status, envelope, _ = run_agent("run", {"argv": ["/no/such/benchmark"]})
    assert status == 0
    assert envelope["exit_code"] == 127
    assert "cannot start" in envelope["error"]


def test_run_expands_python_and_agent_and_applies_env_and_cwd(run_agent, tmp_path: Path):
    task = {"argv": ["{python}", "{agent}", "clock"]}
    status, envelope, _ = run_agent("run", task)
    assert status == 0 and envelope["exit_code"] == 0, envelope["stderr"]
    assert '"started_at"' in envelope["stdout"]
    task = {
        "argv": ["{python}", "-c", "import os; print(os.getcwd()); print(os.environ['BL_X'])"],
        "env": {"BL_X": "forty-two"},
        "cwd": str(tmp_path),
        "stdin": "ignored",
    }
    envelope = run_agent("run", task)[1]
    assert envelope["stdout"].split() == [str(tmp_path), "forty-two"]


def test_run_rejects_a_malformed_task(run_agent):
    status, answer, _ = run_agent("run", {"argv": []})
    assert status != 0 and "argv" in answer["error"]
