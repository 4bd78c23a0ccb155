"""A benchmark that crashes is reported by its signal's name, with the likely cause where
the backend knows one (llama-bench's weight repacking on AMX CPUs), never as a bare
"exited with status -11". The children here really die of SIGSEGV."""

from __future__ import annotations

import json
import signal
import stat
import sys
from pathlib import Path

import pytest
from tests.kit.configs import write_sweep
from tests.sweep.lab import ONE_ATTEMPT, command_params

import benchlab.sweep.attempt as attempt
from benchlab.benchmarks import common
from benchlab.benchmarks.common import exit_text
from benchlab.benchmarks.llama_bench import LlamaBenchBackend
from benchlab.cli import main

SEGV = "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"


@pytest.fixture
def env(store: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    return store


def _errors(store: Path) -> list[str | None]:
    records = sorted((store / "runs" / "by-machine" / "local").glob("*/record.json"))
    return [json.loads(path.read_text()).get("error") for path in records]


def test_a_command_killed_by_sigsegv_is_a_named_crash(tmp_path: Path, env: Path, capsys) -> None:
    path = write_sweep(
        tmp_path / "crash.yaml",
        experiment="crash",
        policies=ONE_ATTEMPT,
        matrix={"backend": "command", "params": command_params(SEGV)},
    )
    assert main(["run", str(path)]) == 0
    (error,) = _errors(env)
    assert error == "benchmark crashed with SIGSEGV (signal 11): no output"
    assert "crashed with SIGSEGV (signal 11)" in capsys.readouterr().out
    assert "likely cause" not in error  # the command backend knows no cause


def _fake_llama_bench(bin_dir: Path) -> Path:
    """A `llama-bench` that segfaults unless called with `--repack 0`, as the pinned build
    does with q8_0 models on an AMX CPU."""
    bin_dir.mkdir()
    script = bin_dir / "llama-bench"
    script.write_text(
        f"#!{sys.executable}\n"
        "import json, os, signal, sys\n"
        "argv = sys.argv[1:]\n"
        "repack = argv[argv.index('--repack') + 1] if '--repack' in argv else '1'\n"
        "if repack != '0':\n"
        "    os.kill(os.getpid(), signal.SIGSEGV)\n"
        "print(json.dumps([dict(n_prompt=0, n_gen=4, avg_ts=5.0)]))\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


@pytest.mark.parametrize(
    ("flags", "hint"),
    [
        ("fpu sse avx512f amx_tile amx_int8", "and this one has AMX (amx_tile in /proc/cpuinfo)"),
        ("fpu sse avx2", None),
    ],
)
def test_llama_bench_crash_names_repack_on_an_amx_cpu(
    tmp_path: Path, env: Path, monkeypatch: pytest.MonkeyPatch, flags: str, hint: str | None
) -> None:
    binary = _fake_llama_bench(tmp_path / "bin")
    model = tmp_path / "tiny.gguf"
    model.write_bytes(b"GGUF")
    cpuinfo = tmp_path / "cpuinfo"  # this machine's CPU, as a Sapphire Rapids reports it
    cpuinfo.write_text(f"processor\t: 0\nflags\t\t: {flags}\n\n")
    monkeypatch.setattr(attempt, "local_cpu_flags", lambda: common.local_cpu_flags(cpuinfo))
    point = {"binary": str(binary), "model_path": str(model)}
    path = write_sweep(
        tmp_path / "llama.yaml",
        experiment="llama",
        policies=ONE_ATTEMPT,
        matrix={
            "backend": "llama-bench",
            "precision": "q8_0",
            "gen_tokens": 4,
            "params": [point, {**point, "repack": 0}],
        },
    )
    assert main(["run", str(path)]) == 0
    errors = [e for e in _errors(env) if e]
    assert len(errors) == 1, errors  # `repack: 0` ran
    assert errors[0].startswith("benchmark crashed with SIGSEGV (signal 11): no output")
    if hint is None:
        assert "likely cause" not in errors[0]
    else:
        assert errors[0].endswith(
            f"; likely cause: llama-bench's weight repacking crashes some builds on AMX CPUs "
            f"{hint}: try `repack: 0` in the sweep's params, a llama-bench axis like any other"
        )


def test_exit_text_names_signals_and_shell_statuses() -> None:
    assert exit_text(3) == "exited with status 3"
    assert exit_text(-signal.SIGSEGV) == "crashed with SIGSEGV (signal 11)"
    assert exit_text(-signal.SIGKILL) == "was killed by SIGKILL (signal 9)"
    assert exit_text(139) == "exited with status 139 (128 + 11: crashed with SIGSEGV, by a shell)"
    assert exit_text(-200) == "exited with status -200"


def test_a_remote_device_gets_the_hint_without_its_flags() -> None:
    backend = LlamaBenchBackend()
    from tests.kit.configs import parse_sweep

    from benchlab.sweep.expand import expand

    config = parse_sweep(
        experiment="x",
        matrix={"backend": "llama-bench", "params": {"model_path": "m.gguf"}},
    )
    (spec,) = expand(config, where="x.yaml")
    hint = backend.crash_hint(spec, signal.SIGSEGV, None)
    assert hint is not None and "(amx_tile in the device's /proc/cpuinfo)" in hint
    assert backend.crash_hint(spec, signal.SIGTERM, None) is None
    off = spec.model_copy(update={"params": {**spec.params, "repack": 0}})
    assert backend.crash_hint(off, signal.SIGSEGV, None) is None
    assert "--repack" in backend.build_task(off, "r").argv
