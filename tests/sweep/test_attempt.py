"""Runner.attempt: every failure class from an injected fault, files, record last, holes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.kit.backend import FakeBackend, envelope
from tests.kit.transport import FakeTransport
from tests.sweep.lab import lab_config

from benchlab.errors import ConfigError, DeviceError, MeasurementError, ParseError
from benchlab.ids import slug
from benchlab.layout import Store
from benchlab.models import GitInfo, RunManifest, RunRecord
from benchlab.sweep import attempt as attempt_module
from benchlab.sweep.attempt import HOLE_WARNING, Runner
from benchlab.sweep.expand import expand, failover_spec
from benchlab.sweep.journal import SweepJournal

GIT = GitInfo(rev="abc1234", branch="main", dirty=False)


@pytest.fixture
def setup(store: Path):
    config = lab_config(
        devices={
            "laptop": {"transport": "local", "command_timeout_s": 30},
            "pi5": {"transport": "local", "failover_to": ["pi5-spare"]},
            "pi5-spare": {"transport": "local"},
        }
    )
    backend = FakeBackend()
    runner = Runner(
        Store(store), config, experiment="lab", git_info=GIT, _backend=lambda n: backend
    )
    spec = expand(config)[0]
    return runner, backend, spec, config


def run_dir(runner: Runner, spec, rid: str = "rid-20250106T120000Z") -> Path:
    return runner.store.run_dir(spec.machine_id, rid)


def go(runner: Runner, spec, transport: FakeTransport, **kw):
    return runner.attempt(spec, "rid-20250106T120000Z", transport, **kw)


def read(path: Path) -> dict:
    return json.loads(path.read_text())


def test_ok_writes_every_file_and_record_last(setup, monkeypatch: pytest.MonkeyPatch) -> None:
    runner, _, spec, _ = setup
    order: list[str] = []
    for name in ("write_model", "atomic_write_json", "atomic_write_text"):
        real = getattr(attempt_module, name)

        def spy(path, obj, _real=real, **kw):
            order.append(path.relative_to(runner.store.root).as_posix().split("/", 4)[-1])
            _real(path, obj, **kw)

        monkeypatch.setattr(attempt_module, name, spy)
    out = go(runner, spec, FakeTransport(), worker="laptop-0", attempt=1, attempts=3)
    assert out.failure_kind is None and out.ok
    assert order[0] == "record.json" and order[-1] == "record.json"  # marker first, real last
    assert set(order) >= {
        "manifest.json",
        "kernel.json",
        "batch.json",
        "raw/stdout.txt",
        "raw/stderr.txt",
        "raw/envelope.json",
    }
    d = run_dir(runner, spec)
    rec = RunRecord.model_validate(read(d / "record.json"))
    assert rec.status == "ok" and rec.failure_kind is None and rec.error is None
    assert rec.metrics["decode_tok_per_sec"] == 15.56 and rec.metrics["prefill_tok_per_sec"] == 56.8
    assert rec.worker == "laptop-0" and rec.attempts == 3 and rec.spec == spec
    assert rec.timings.duration_s == 1.5  # from the device's own stamps
    assert rec.telemetry == {"load_1m": {"min": 0.5, "median": 0.7, "max": 0.9}, "samples_n": 2}
    assert read(d / "kernel.json")["run_id"] == "rid-20250106T120000Z"
    assert read(d / "raw" / "envelope.json")["telemetry"]["samples"] == [{}, {}]
    manifest = RunManifest.model_validate(read(d / "manifest.json"))
    assert slug(manifest.model.name) == slug(spec.model) and manifest.model.name == "SmolLM2-135M"
    assert (manifest.backend, manifest.mode, manifest.spec_id, manifest.experiment) == (
        "reference",
        "batch",
        spec.spec_id,
        "lab",
    )
    assert manifest.git.rev == "abc1234" and manifest.harness.name == "benchlab"
    assert manifest.artifacts == {"kernel": "kernel.json", "batch": "batch.json"}


def test_model_name_falls_back_to_spec_when_slugs_differ(setup) -> None:
    runner, backend, spec, _ = setup
    backend.model_display = "Some Other Model"
    go(runner, spec, FakeTransport())
    assert read(run_dir(runner, spec) / "manifest.json")["model"]["name"] == spec.model


def test_task_gets_device_timeout_and_worker_placeholders(setup) -> None:
    runner, _, spec, _ = setup
    spec = spec.model_copy(update={"params": {"argv": ["--vm=bench-${worker_instance_id}"]}})
    transport = FakeTransport()
    go(runner, spec, transport, worker="laptop-3")
    verb, payload, timeout = transport.calls[0]
    assert verb == "run" and payload["argv"][-1] == "--vm=bench-laptop-3"
    assert payload["timeout_s"] == 30  # min(task 60, device command_timeout_s 30)
    assert timeout > 30


FAULTS = [
    ("check_available DeviceError", "check", DeviceError("ssh dropped", "laptop"), "transport"),
    ("build_task DeviceError", "build", DeviceError("exists() could not look"), "transport"),
    ("build_task ConfigError", "build", ConfigError("unknown model"), "config"),
    ("build_task bug", "build", KeyError("threads"), "config"),
    ("check ConfigError", "check", ConfigError("llama-bench not on PATH"), "config"),
    ("parser ParseError", "parse", ParseError("garbled"), "parse"),
    ("parser bug", "parse", ZeroDivisionError("x"), "parse"),
    ("parser says no", "parse", MeasurementError("did not fit"), "measurement"),
]


@pytest.mark.parametrize(("name", "where", "error", "kind"), FAULTS, ids=[f[0] for f in FAULTS])
def test_backend_faults_are_classified(setup, name, where, error, kind) -> None:
    runner, backend, spec, _ = setup
    setattr(backend, f"{where}_error", error)
    out = go(runner, spec, FakeTransport())
    assert out.failure_kind == kind
    rec = read(run_dir(runner, spec) / "record.json")
    assert rec["status"] == "failed" and rec["failure_kind"] == kind
    assert str(error) in rec["error"] and "\n" not in rec["error"]
    assert (run_dir(runner, spec) / "raw" / "stdout.txt").exists() == (where == "parse")


def test_transport_call_failures_are_transport(setup) -> None:
    runner, _, spec, _ = setup
    assert go(runner, spec, FakeTransport(script=[DeviceError("gone")])).failure_kind == "transport"
    out = go(runner, spec, FakeTransport(script=[{"error": "agent confused"}]))
    assert out.failure_kind == "transport" and "not a run envelope" in out.record.error
    assert read(run_dir(runner, spec) / "raw" / "envelope.json") == {"error": "agent confused"}


def test_nonzero_exit_and_timeout_are_measurement_with_raw_kept(setup) -> None:
    runner, _, spec, _ = setup
    bad = envelope("partial output", exit_code=1, stderr="line1\nout of memory\n")
    out = go(runner, spec, FakeTransport(script=[bad]))
    assert out.failure_kind == "measurement" and "status 1: out of memory" in out.record.error
    d = run_dir(runner, spec)
    assert (d / "raw" / "stdout.txt").read_text() == "partial output"
    assert "out of memory" in (d / "raw" / "stderr.txt").read_text()
    assert not (d / "kernel.json").exists()
    timed = envelope("", exit_code=None, timed_out=True)
    out = go(runner, spec, FakeTransport(script=[timed]))
    assert out.failure_kind == "measurement" and "timed out" in out.record.error


def test_ok_run_without_metrics_is_parse_failure(setup) -> None:
    runner, _, spec, _ = setup
    out = go(runner, spec, FakeTransport(script=[envelope(json.dumps({}))]))
    assert out.failure_kind == "parse" and "no metrics" in out.record.error
    assert (run_dir(runner, spec) / "raw" / "stdout.txt").read_text() == "{}"


def test_unknown_backend_is_config(store: Path) -> None:
    config = lab_config()

    def refuse(name: str):
        raise ConfigError(f"backend {name!r}: unknown")

    runner = Runner(Store(store), config, experiment="lab", git_info=GIT, _backend=refuse)
    out = runner.attempt(expand(config)[0], "rid-1", FakeTransport())
    assert out.failure_kind == "config"


def test_retry_overwrites_and_clears_stale_files(setup) -> None:
    runner, _, spec, _ = setup
    go(runner, spec, FakeTransport(script=[envelope("junk", exit_code=0)]))  # parse failure
    d = run_dir(runner, spec)
    assert (d / "raw" / "stdout.txt").exists()
    out = go(runner, spec, FakeTransport(script=[DeviceError("gone")]), attempt=2, attempts=3)
    assert out.failure_kind == "transport"
    assert sorted(p.name for p in d.iterdir()) == [
        "README.md",
        "manifest.json",
        "raw",
        "record.json",
    ]
    assert [p.name for p in (d / "raw").iterdir()] == ["task.json"]  # the stale stdout is gone
    assert read(d / "record.json")["attempt"] == 2


def test_killed_while_writing_leaves_a_not_ok_record(setup, monkeypatch) -> None:
    runner, _, spec, _ = setup
    real = attempt_module.write_model

    def die_on_kernel(path, model, **kw):
        if path.name == "kernel.json":
            raise KeyboardInterrupt  # stands in for SIGKILL between two writes
        real(path, model, **kw)

    monkeypatch.setattr(attempt_module, "write_model", die_on_kernel)
    with pytest.raises(KeyboardInterrupt):
        go(runner, spec, FakeTransport())
    journal = SweepJournal(runner.store, "lab")
    journal.use_stamp("20250106T120000Z")
    rec = read(run_dir(runner, spec) / "record.json")
    assert rec["status"] == "failed" and rec["error"].startswith("interrupted: attempt 1")


def test_failover_spec_record_and_manifest_carry_tag(setup) -> None:
    runner, _, _, config = setup
    spec = next(s for s in expand(config) if s.device == "pi5")
    moved = failover_spec(config, spec, "pi5-spare")
    out = runner.attempt(moved, f"{moved.spec_id}-20250106T120000Z", FakeTransport("pi5-spare"))
    assert "failover-from:pi5" in out.record.tags
    d = runner.store.run_dir("pi5-spare", f"{moved.spec_id}-20250106T120000Z")
    assert "failover-from:pi5" in read(d / "manifest.json")["tags"]


def test_extra_files_are_written_and_listed(setup) -> None:
    runner, _, spec, _ = setup
    stdout = json.dumps({"decode": 1.0, "extra": {"fleetbench.json": {"x": 1}}})
    go(runner, spec, FakeTransport(script=[envelope(stdout)]))
    d = run_dir(runner, spec)
    assert read(d / "fleetbench.json") == {"x": 1}
    assert read(d / "manifest.json")["artifacts"]["fleetbench"] == "fleetbench.json"


def test_write_hole_texts_and_never_over_ok(setup) -> None:
    runner, _, spec, _ = setup
    reason = (
        "device 'pi5' was taken out of service after repeated transport failures (ssh: timed out)"
    )
    hole = runner.write_hole(spec, "rid-20250106T120000Z", reason)
    assert hole.status == "failed" and hole.failure_kind == "transport"
    assert hole.error == (
        "not attempted: device 'pi5' was taken out of service after repeated transport "
        "failures (ssh: timed out). Re-run to retry this point."
    )
    assert hole.warnings == [HOLE_WARNING]
    assert HOLE_WARNING == (
        "this point was never measured; the record exists so the hole in the matrix is "
        "visible and so a resumed sweep will pick it up"
    )
    assert read(run_dir(runner, spec) / "record.json")["status"] == "failed"
    go(runner, spec, FakeTransport())
    kept = runner.write_hole(spec, "rid-20250106T120000Z", reason)
    assert kept.status == "ok"
    assert read(run_dir(runner, spec) / "record.json")["status"] == "ok"


def test_retry_warning_text() -> None:
    assert attempt_module.retry_warning(2, 3, "pi5") == (
        "produced on attempt 2 of 3 after 1 transport failure(s) on pi5"
    )


def test_a_linked_machine_runs_dir_is_refused_and_nothing_is_written_through_it(
    setup, tmp_path: Path
) -> None:
    """A committed link on the way to a run dir (ARCHITECTURE.md, One reader and one writer
    path): the run's files are refused in one error naming the link, none lands outside."""
    from benchlab.errors import UnsafePathError

    runner, _, spec, _ = setup
    outside = tmp_path / "outside"
    outside.mkdir()
    machine = runner.store.by_machine / spec.machine_id
    machine.parent.mkdir(parents=True, exist_ok=True)
    machine.symlink_to(outside, target_is_directory=True)
    with pytest.raises(UnsafePathError, match="symbolic link"):
        runner.write_hole(spec, "rid-20250106T120000Z", "device gone")
    with pytest.raises(UnsafePathError, match="symbolic link"):
        go(runner, spec, FakeTransport(script=[envelope(json.dumps({"decode": 1.0}))]))
    assert list(outside.rglob("*")) == []
