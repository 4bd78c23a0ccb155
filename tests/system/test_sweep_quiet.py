"""A sweep on a machine that is not quiet: one warning line each, before the first point,
and a run whose repeats swing 12x is marked unstable in its record, `bench show` and
`bench list`. The machine's state is injected through BENCHLAB_SYSFS_ROOT (a fake tree);
the agent, the benchmark process and LocalTransport are real."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.agent.fakes import fake_machine, tool
from tests.kit.configs import write_sweep
from tests.sweep.lab import ONE_ATTEMPT, command_params

from benchlab.layout import Store
from benchlab.models import RunRecord

FAKE_LLAMA_BENCH = """
import json, os
pp = [float(v) for v in os.environ["FAKE_PP_SAMPLES"].split(",")]
tg = [50.0, 51.0]

def row(n_prompt, n_gen, samples):
    mean = sum(samples) / len(samples)
    var = sum((s - mean) ** 2 for s in samples) / (len(samples) - 1)
    return {"build_commit": "4df29be", "build_number": 1, "model_type": "llama ?B F16",
            "n_prompt": n_prompt, "n_gen": n_gen, "n_depth": 0, "n_threads": 2,
            "avg_ts": mean, "stddev_ts": var ** 0.5, "samples_ts": samples}

print(json.dumps([row(64, 0, pp), row(0, 16, tg)]))
"""
"""llama-bench -o json as it prints two tests; the prefill samples come from the env."""


@pytest.fixture
def env(store: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    return store


def command_config(tmp_path: Path) -> Path:
    code = "import json; print(json.dumps(dict(decode=10)))"
    return write_sweep(
        tmp_path / "quiet.yaml",
        experiment="quiet",
        policies=ONE_ATTEMPT,
        matrix={"backend": "command", "threads": 1, "params": command_params(code)},
    )


def llama_config(tmp_path: Path, samples: str, **policies: object) -> Path:
    binary = tool(tmp_path / "bin", "llama-bench", FAKE_LLAMA_BENCH)
    return write_sweep(
        tmp_path / "swing.yaml",
        experiment="swing",
        devices={"local": {"transport": "local", "env": {"FAKE_PP_SAMPLES": samples}}},
        policies={**ONE_ATTEMPT, **policies},
        matrix={
            "backend": "llama-bench",
            "model": "tiny",
            "precision": "f16",
            "threads": 2,
            "prompt_tokens": 64,
            "gen_tokens": 16,
            "params": {"binary": str(binary), "model_path": "/models/tiny.gguf"},
        },
    )


def only_record(store: Path) -> RunRecord:
    (path,) = sorted(Store(store).by_machine.glob("*/*/record.json"))
    return RunRecord.model_validate(json.loads(path.read_text()))


def test_a_busy_machine_is_named_before_the_sweep_starts(
    tmp_path: Path, env: Path, bench, monkeypatch
) -> None:
    root = fake_machine(
        tmp_path / "root",
        governor="powersave",
        load="1.90 1.50 1.00 2/200 77",
        swap_used_kb=300 * 1024,
    )
    monkeypatch.setenv("BENCHLAB_SYSFS_ROOT", str(root))
    code, out, _ = bench("run", str(command_config(tmp_path)))
    assert code == 0
    lines = out.splitlines()
    first_point = next(i for i, line in enumerate(lines) if line.startswith("[  1/1]"))
    warned = [line for line in lines[:first_point] if "is not quiet" in line]
    assert warned == [
        "WARNING device 'local' is not quiet: governor is powersave: set performance for "
        "stable numbers (`cpupower frequency-set -g performance`)",
        "WARNING device 'local' is not quiet: load 1.9 on 2 cores: the machine is busy; "
        "stop other jobs or numbers will swing",
        "WARNING device 'local' is not quiet: 300 MB of swap in use: memory is short and a "
        "run may page",
    ]
    record = only_record(env)
    assert record.system is not None and record.system["load"] == [1.9, 1.5, 1.0]
    assert record.system["governors"] == ["powersave"]


def test_a_quiet_machine_gets_no_warning(tmp_path: Path, env: Path, bench, monkeypatch) -> None:
    monkeypatch.setenv("BENCHLAB_SYSFS_ROOT", str(fake_machine(tmp_path / "root")))
    code, out, _ = bench("run", str(command_config(tmp_path)))
    assert code == 0
    assert "not quiet" not in out


def test_a_12x_swing_between_repeats_is_unstable(
    tmp_path: Path, env: Path, bench, monkeypatch
) -> None:
    monkeypatch.setenv("BENCHLAB_SYSFS_ROOT", str(fake_machine(tmp_path / "root")))
    code, out, _ = bench("run", str(llama_config(tmp_path, "21528,1699")))
    assert code == 0, out
    record = only_record(env)
    assert record.status == "ok"
    assert record.unstable is True and "unstable" in record.tags
    (warning,) = [w for w in record.warnings if w.startswith("unstable:")]
    assert warning.startswith("unstable: prefill_tok_per_sec varies 121% between repeats")
    assert "over 10%" in warning
    assert record.metrics["peak_rss_mb"] > 0  # the fake benchmark process itself
    assert "energy_j" not in record.metrics  # no counter on the fake machine
    code, out, _ = bench("show", record.run_id)
    assert code == 0
    assert "UNSTABLE (see warnings)" in out
    facts = {
        line.split()[0]: line.split(None, 1)[1].strip()
        for line in out.splitlines()
        if len(line.split()) > 1
    }
    assert facts["energy_j"] == "not measured"
    assert facts["joules_per_token"] == "not measured"
    assert facts["gpu_mem_peak_mb"] == "not measured"
    assert float(facts["peak_rss_mb"]) > 0
    assert bench("catalog", "build")[0] == 0
    code, out, _ = bench("list")
    assert code == 0 and "ok unstable" in out
    code, out, _ = bench("list", "--format", "json")
    (entry,) = json.loads(out)
    assert entry["peak_rss_mb"] == record.metrics["peak_rss_mb"]
    assert "unstable" in entry["tags"]
    assert entry["joules_per_token"] is None and entry["gpu_mem_peak_mb"] is None  # not 0


def test_steady_repeats_are_stable_and_the_threshold_is_a_policy(
    tmp_path: Path, env: Path, bench, monkeypatch
) -> None:
    monkeypatch.setenv("BENCHLAB_SYSFS_ROOT", str(fake_machine(tmp_path / "root")))
    assert bench("run", str(llama_config(tmp_path, "21528,21400")))[0] == 0
    record = only_record(env)
    assert record.unstable is False and "unstable" not in record.tags
    assert not [w for w in record.warnings if w.startswith("unstable")]


def test_max_cv_is_configurable(tmp_path: Path, env: Path, bench, monkeypatch) -> None:
    monkeypatch.setenv("BENCHLAB_SYSFS_ROOT", str(fake_machine(tmp_path / "root")))
    assert bench("run", str(llama_config(tmp_path, "21528,1699", max_cv=2.0)))[0] == 0
    assert only_record(env).unstable is False


@pytest.mark.slow
def test_the_reference_benchmark_reports_its_spread_so_stability_is_judged(
    tmp_path: Path, env: Path, bench
) -> None:
    """The default sweep's backend: its reps' spread reaches the record, so a swing
    between them is seen (unstable is True or False here, never unknown)."""
    path = write_sweep(
        tmp_path / "ref.yaml",
        experiment="ref",
        policies=ONE_ATTEMPT,
        matrix={
            "backend": "reference",
            "model": "tiny",
            "precision": "q8",
            "threads": 1,
            "prompt_tokens": 16,
            "gen_tokens": 4,
            "batch_sizes": [1],
            "params": {"prefill_sizes": [16], "reps": 3, "batch_steps": 2},
        },
    )
    assert bench("run", str(path))[0] == 0
    record = only_record(env)
    assert record.status == "ok", record.error
    assert record.metrics["prefill_stddev"] >= 0 and record.metrics["decode_stddev"] >= 0
    assert record.unstable in (True, False)
    assert (record.unstable is True) == ("unstable" in record.tags)
