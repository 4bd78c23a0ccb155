"""Gates: the pure rule, and real sweeps whose declared gates are judged by `bench run
--publish` and `bench regression --gates`, and by the onboarding checklist."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from tests.kit.catalog import catalog_doc
from tests.kit.configs import write_sweep

from benchlab.cli import main
from benchlab.detect.gates import (
    DEFAULT_GATE,
    FAILED,
    PASSED,
    UNKNOWN,
    combine,
    default_gates,
    evaluate,
)
from benchlab.errors import ConfigError
from benchlab.layout import Store, read_json
from benchlab.models import GateConfig
from benchlab.sweep.config import parse_sweep_config


def test_bounds() -> None:
    gate = GateConfig(metric="decode_tok_per_sec", min=5, max=50)
    assert evaluate(gate, {"decode_tok_per_sec": 10.0}, None).status == PASSED
    low = evaluate(gate, {"decode_tok_per_sec": 4.0}, None)
    assert low.status == FAILED and low.detail == "decode_tok_per_sec 4 < min 5"
    assert evaluate(gate, {"decode_tok_per_sec": 51.0}, None).status == FAILED


def test_speedup_over_a_baseline() -> None:
    gate = GateConfig(metric="peak_tok_per_sec", min_speedup=0.95, baseline="previous")
    ok = evaluate(gate, {"peak_tok_per_sec": 97.0}, {"peak_tok_per_sec": 100.0}, baseline_run="r1")
    assert ok.status == PASSED and ok.actual_speedup == 0.97 and ok.baseline_run == "r1"
    slow = evaluate(gate, {"peak_tok_per_sec": 90.0}, {"peak_tok_per_sec": 100.0})
    assert slow.status == FAILED and "speedup 0.9 < min_speedup 0.95" in (slow.detail or "")
    first = evaluate(gate, {"peak_tok_per_sec": 90.0}, None)
    assert first.status == PASSED and "first run of its series" in (first.detail or "")


def test_could_not_check_is_not_failed() -> None:
    named = GateConfig(metric="peak_tok_per_sec", min_speedup=1.0, baseline="run-x")
    missing_base = evaluate(named, {"peak_tok_per_sec": 9.0}, None)
    assert missing_base.status == UNKNOWN and "run-x not found" in (missing_base.detail or "")
    no_metric = evaluate(GateConfig(metric="speedup", min_speedup=2), {}, None)
    assert no_metric.status == UNKNOWN and no_metric.detail == "the run has no speedup"
    as_speedup = evaluate(GateConfig(metric="speedup", min_speedup=45), {"speedup": 44.92}, None)
    assert as_speedup.status == FAILED and as_speedup.actual_speedup == 44.92  # the example run's


def test_a_gate_needs_a_condition() -> None:
    with pytest.raises(ConfigError, match="gates"):
        parse_sweep_config(
            {
                "experiment": "x",
                "devices": {"d": {"transport": "local"}},
                "matrix": {"backend": "reference", "model": "tiny"},
                "gates": [{"metric": "peak_tok_per_sec"}],
            },
            "x.yaml",
        )


def gated_sweep(tmp_path: Path, gates: list[dict], machine: str = "box1") -> tuple[Path, Path]:  # type: ignore[type-arg]
    """A real command-backend sweep whose decode figure is read from a file we can change."""
    value = tmp_path / "value.txt"
    value.write_text("10\n")
    path = write_sweep(
        tmp_path / "gated.yaml",
        experiment="gated",
        devices={"box": {"transport": "local", "machine_id": machine}},
        gates=gates,
        matrix={
            "backend": "command",
            "model": "toy",
            "params": {
                "argv": [
                    "{python}",
                    "-c",
                    f"print('{{\"decode\": %s}}' % open({str(value)!r}).read().strip())",
                ],
                "parser": "json",
                "fields": {"decode": "decode"},
            },
        },
    )
    return path, value


NO_SLOWER = {
    "name": "no-slower",
    "metric": "decode_tok_per_sec",
    "min_speedup": 0.9,
    "baseline": "previous",
}


def run_dirs(layout: Store) -> list[Path]:
    """box1's run dirs. Not `glob("box1/*/")`: before Python 3.11 a trailing slash also
    matches files."""
    return [p for p in layout.by_machine.glob("box1/*") if p.is_dir()]


@pytest.mark.slow
def test_publish_records_verdicts_and_regression_gates_fails_ci(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config, value = gated_sweep(tmp_path, [NO_SLOWER, {"metric": "decode_tok_per_sec", "min": 1}])
    base = ["--store", str(store)]
    assert main([*base, "run", str(config), "--publish"]) == 0
    out = capsys.readouterr().out
    assert "gates: 1 of 1 run(s) pass" in out and "catalog: 1 new" in out
    layout = Store(store)
    [first_dir] = run_dirs(layout)  # box1/ also holds specs.json
    manifest = read_json(first_dir / "manifest.json")
    assert manifest["gate"]["status"] == PASSED
    assert read_json(first_dir / "gate.json") == manifest["gate"]
    assert [c["name"] for c in manifest["gate"]["checks"]] == ["no-slower", "decode_tok_per_sec"]
    assert len(catalog_doc(layout.catalog_path)["runs"]) == 1  # published without DVC

    value.write_text("4\n")  # the next build is 2.5x slower
    assert main([*base, "run", str(config), "--fresh", "--publish"]) == 0
    out = capsys.readouterr().out
    assert "gates: 1 of 2 run(s) pass" in out and "no-slower: speedup 0.4 < min_speedup" in out
    assert main([*base, "regression", "--gates", "--format", "json"]) == 1
    [row] = json.loads(capsys.readouterr().out)
    assert row["status"] == FAILED and row["gate"] == "no-slower" and row["speedup"] == 0.4
    assert row["baseline"] == first_dir.name

    value.write_text("10\n")  # fixed: the newest run of the series passes again
    assert main([*base, "run", str(config), "--fresh", "-q"]) == 0
    capsys.readouterr()
    assert main([*base, "regression", "--gates", "--format", "json"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert row["status"] == PASSED and row["speedup"] == 2.5
    newest = max(run_dirs(layout), key=lambda p: p.name)
    assert read_json(newest / "manifest.json")["gate"]["status"] == PASSED  # written by --gates


def test_regression_gates_takes_the_config_when_state_cannot_find_it(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config, _ = gated_sweep(tmp_path, [{"metric": "decode_tok_per_sec", "max": 5}])
    monkeypatch.chdir(tmp_path)
    assert main(["--store", str(store), "run", "gated.yaml", "-q"]) == 0
    moved = tmp_path / "elsewhere.yaml"
    config.rename(moved)  # state.json's relative path no longer resolves
    capsys.readouterr()
    assert main(["--store", str(store), "regression", "--gates", "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out) == [] and "gated.yaml not found" in captured.err
    code = main(
        ["--store", str(store), "regression", "--gates", "--config", str(moved), "--format", "json"]
    )
    assert code == 1
    [row] = json.loads(capsys.readouterr().out)
    assert row["detail"] == "decode_tok_per_sec 10 > max 5"


def test_onboarding_checklist_checks_a_real_gate(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from benchlab.machines.onboard import checklist

    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    assert main(["onboard", "--machine-id", "box1", "--no-smoke"]) == 0
    config, _ = gated_sweep(tmp_path, [{"metric": "decode_tok_per_sec", "min": 1000}])
    assert main(["run", str(config), "--publish", "-q"]) == 0
    full = {c.key: c for c in checklist(Store(store), "box1")}["full_run"]
    assert not full.passed
    assert "0 of 1 full run(s) pass their gate" in full.detail and "< min 1000" in full.detail

    data = yaml.safe_load(config.read_text())
    data["gates"] = [{"metric": "decode_tok_per_sec", "min": 5}]  # the same run, a gate it meets
    config.write_text(yaml.safe_dump(data))
    full = {c.key: c for c in checklist(Store(store), "box1")}["full_run"]
    assert full.passed and full.detail == "1 of 1 full run(s) pass their gate"


@pytest.mark.slow
def test_a_run_without_declared_gates_meets_the_default_gate(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from benchlab.machines.onboard import checklist

    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    config, value = gated_sweep(tmp_path, [])
    assert main(["run", str(config), "--publish", "-q"]) == 0
    assert {c.key: c for c in checklist(Store(store), "box1")}["full_run"].passed
    value.write_text("3\n")  # a later run at under half the speed of the one before
    data = yaml.safe_load(config.read_text())
    data["experiment"] = "gated-again"
    config.write_text(yaml.safe_dump(data))
    main(["run", str(config), "--publish", "-q"])
    full = {c.key: c for c in checklist(Store(store), "box1")}["full_run"]
    assert full.passed and full.detail.startswith("1 of 2 full run(s)")


# --- verdicts in the catalog stage (ARCHITECTURE.md, The catalog: marks and verdicts) -------


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True, timeout=60
    )
    return done.stdout


@pytest.mark.slow
def test_the_catalog_stage_writes_verdicts_and_show_prints_them(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`bench catalog build` (the `dvc repro` stage), not `--publish`, judges the runs: the
    declared gate's verdict lands in the entry, and `bench show` prints it with the mark."""
    config, _ = gated_sweep(
        tmp_path, [{"name": "fast", "metric": "decode_tok_per_sec", "min": 1000}]
    )
    base = ["--store", str(store)]
    assert main([*base, "run", str(config), "-q"]) == 0
    [run_dir] = run_dirs(Store(store))
    assert "gate" not in read_json(run_dir / "manifest.json") or not read_json(
        run_dir / "manifest.json"
    ).get("gate")  # nothing judged it yet
    assert main([*base, "catalog", "build"]) == 0
    [entry] = catalog_doc(Store(store).catalog_path)["runs"]
    assert entry["gate"] == FAILED
    assert entry["gate_detail"] == "fast: decode_tok_per_sec 10 < min 1000"

    assert main([*base, "mark-outlier", entry["run_id"], "--reason", "fan stuck"]) == 0
    capsys.readouterr()
    assert main([*base, "show", entry["run_id"]]) == 0
    out = capsys.readouterr().out
    assert "failed (fast: decode_tok_per_sec 10 < min 1000)" in out
    assert "marked (fan stuck)" in out
    shutil.rmtree(run_dir)  # the same from the catalog entry alone
    assert main([*base, "show", entry["run_id"]]) == 0
    out = capsys.readouterr().out
    assert "fast: decode_tok_per_sec 10 < min 1000" in out and "marked (fan stuck)" in out


@pytest.mark.slow
def test_the_gate_verdict_reaches_a_clone_without_run_dirs(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The onboarding gate line on a fresh `git clone`: no runs/ dir, only the catalog."""
    from benchlab.machines.onboard import checklist

    repo = store.parent.parent
    git(repo, "init", "-q", "-b", "main")
    (repo / ".gitignore").write_text("experiments/benchmark/runs/\n")
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    assert main(["onboard", "--machine-id", "box1", "--no-smoke"]) == 0
    config, value = gated_sweep(tmp_path, [{"metric": "decode_tok_per_sec", "min": 5}])
    assert main(["run", str(config), "-q"]) == 0
    value.write_text("3\n")  # a second run that misses the gate
    assert main(["run", str(config), "--fresh", "-q"]) == 0
    assert main(["catalog", "build"]) == 0
    git(repo, "add", ".gitignore", "experiments")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "c")

    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    other = Store(clone / "experiments" / "benchmark")
    assert not other.runs_dir.exists()  # nothing but the tracked catalog
    monkeypatch.setenv("BENCHLAB_STORE", str(other.root))
    full = {c.key: c for c in checklist(other, "box1")}["full_run"]
    assert full.passed, full.detail
    assert full.detail == "1 of 2 full run(s) pass their gate"


def test_the_default_gate_judges_every_headline_metric_a_run_yields() -> None:
    """A llama-bench run has no batched peak: the default gate judges its decode AND its
    prefill, so a prefill that fell under half of the previous run's fails it although the
    decode held (each metric its own history: ARCHITECTURE.md, Regression detection)."""
    run = {"decode_tok_per_sec": 50.0, "prefill_tok_per_sec": 300.0}
    previous = {"decode_tok_per_sec": 51.0, "prefill_tok_per_sec": 700.0}
    gates = default_gates(DEFAULT_GATE, run)
    assert [g.metric for g in gates] == ["decode_tok_per_sec", "prefill_tok_per_sec"]
    verdict = combine([evaluate(g, run, previous, baseline_run="prev") for g in gates])
    assert verdict.status == FAILED
    assert verdict.detail == "default prefill_tok_per_sec: speedup 0.429 < min_speedup 0.5"
    # One metric: the default gate as it was, on that metric.
    [only] = default_gates(DEFAULT_GATE, {"peak_tok_per_sec": 9.0})
    assert only == DEFAULT_GATE
