"""The optional run files: `workload.json` of a command run, and README.md in every run dir.

A real `bench run` of a command sweep on the local device writes the run dirs; the README's
own re-run command is then run as printed, and `bench promote` publishes a README only as a
redacted copy.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from collections.abc import Callable
from pathlib import Path

import jsonschema
import pytest
from tests.kit.configs import write_sweep

from benchlab.benchmarks.readme import README
from benchlab.catalog.schemas import validate
from benchlab.layout import Store
from benchlab.models import CommandWorkload, GitInfo, RunRecord
from benchlab.sweep.attempt import Runner
from benchlab.sweep.config import load_sweep_config
from benchlab.sweep.expand import expand

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"
HOME_TELL = "/home/qzhang/models/tiny.gguf"
"""A private path on the command line: promote must not publish it."""
PROGRAM = (
    "import sys; t = {threads}; "
    "print('{\"d\": 15.0}') if t == 1 else sys.exit('no room for ' + sys.argv[1])"
)
"""threads 1 measures; threads 2 fails as a measurement (exit status 1, a message)."""

Bench = Callable[..., tuple[int, str, str]]


@pytest.fixture
def lab(store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bench: Bench) -> Path:
    """A finished sweep of two command points (one ok, one failed); returns its config."""
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    config = write_sweep(
        tmp_path / "lab.yaml",
        experiment="lab",
        matrix={
            "backend": "command",
            "threads": [1, 2],
            "prompt_tokens": 8,
            "gen_tokens": 4,
            "params": {
                "argv": ["{python}", "-c", PROGRAM, HOME_TELL],
                "fields": {"decode": "d"},
                "env": {"BENCH_TOKEN": "s3cr3t-value"},
            },
        },
    )
    code, out, err = bench("run", str(config))
    assert code == 0, out + err
    return config


def run_dirs(store: Path) -> dict[str, Path]:
    """Run dirs of the sweep by status and thread count: `ok-1`, `failed-2` ..."""
    out = {}
    for record_path in sorted((store / "runs" / "by-machine" / "local").glob("*/record.json")):
        record = RunRecord.model_validate_json(record_path.read_text())
        assert record.spec is not None
        out[f"{record.status}-{record.spec.threads}-r{record.spec.repeat or 0}"] = (
            record_path.parent
        )
    return out


@pytest.mark.slow
def test_every_run_dir_has_a_readme_saying_how_it_was_made(store: Path, lab: Path) -> None:
    dirs = run_dirs(store)
    assert set(dirs) == {"ok-1-r0", "failed-2-r0"}
    for key, run_dir in dirs.items():
        text = (run_dir / README).read_text()
        assert text.startswith(f"# {run_dir.name}\n")
        for fact in ("machine: `local`, device `local`", "backend: `command`", "model: `tiny`"):
            assert fact in text, (key, fact)
        assert f"threads {key.split('-')[1]}" in text
        assert "    " + shlex.join(["bench", "run", str(lab)]) + "\n" in text
        assert shlex.quote(HOME_TELL) in text, "the command the device ran"
        assert "s3cr3t-value" not in text, "environment values stay in the config"
    failed = (dirs["failed-2-r0"] / README).read_text()
    assert "status: failed (measurement)" in failed
    assert "exited with status" not in failed, "error text stays in record.json"
    assert "status: ok" in (dirs["ok-1-r0"] / README).read_text()


@pytest.mark.slow
def test_the_readmes_inject_command_measures_the_point_again(
    store: Path, lab: Path, bench: Bench
) -> None:
    ok = run_dirs(store)["ok-1-r0"]
    text = (ok / README).read_text()
    [inject] = [line.strip() for line in text.splitlines() if line.startswith("    bench inject")]
    words = shlex.split(inject)
    assert words[:3] == ["bench", "inject", str(lab)] and words[-2:] == ["--repeat", "1"]
    code, out, err = bench(*words[1:])
    assert code == 0, out + err
    code, out, err = bench("run", str(lab))
    assert code == 0, out + err
    again = run_dirs(store)["ok-1-r1"]
    first = RunRecord.model_validate_json((ok / "record.json").read_text())
    second = RunRecord.model_validate_json((again / "record.json").read_text())
    assert second.identity == first.identity, "the same measurement, one more repeat"
    assert first.spec is not None and second.spec is not None
    assert second.spec.model_dump(exclude={"spec_id", "repeat"}) == first.spec.model_dump(
        exclude={"spec_id", "repeat"}
    )


def test_a_command_run_keeps_its_workload_valid_against_its_schema(store: Path, lab: Path) -> None:
    dirs = run_dirs(store)
    path = dirs["ok-1-r0"] / "workload.json"
    data = json.loads(path.read_text())
    validate(path, data, CommandWorkload.SCHEMA_ID)  # the schema generated from the model
    checked_in = json.loads((SCHEMAS / "command-workload.v1.json").read_text())
    jsonschema.Draft202012Validator(checked_in).validate(data)  # and the file others use
    workload = CommandWorkload.model_validate(data)
    assert workload.run_id == dirs["ok-1-r0"].name
    assert workload.argv == ["{python}", "-c", PROGRAM, HOME_TELL]
    assert workload.command[2] == PROGRAM.replace("{threads}", "1")
    assert workload.reported == {"decode": 15.0} and workload.threads == 1
    assert "BENCH_TOKEN" in workload.env_names and "s3cr3t-value" not in path.read_text()
    manifest = json.loads((dirs["ok-1-r0"] / "manifest.json").read_text())
    assert manifest["artifacts"]["workload"] == "workload.json"
    bad = {**data, "parser": "xml"}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(checked_in).validate(bad)
    assert not (dirs["failed-2-r0"] / "workload.json").exists(), "nothing parsed, nothing said"


def test_a_hole_gets_a_readme_too(store: Path, lab: Path) -> None:
    config = load_sweep_config(lab)
    runner = Runner(Store(store), config, experiment="lab", git_info=GitInfo())
    spec = expand(config)[1]
    runner.write_hole(spec, f"{spec.spec_id}-20991231T000000Z", "device gone")
    text = (Store(store).run_dir("local", f"{spec.spec_id}-20991231T000000Z") / README).read_text()
    assert "status: not attempted (a hole)" in text
    assert shlex.join(["bench", "run", str(lab)]) in text


def test_promote_publishes_the_readme_only_redacted(store: Path, lab: Path, bench: Bench) -> None:
    repo = store.parents[1]
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True, timeout=60)
    (repo / ".gitignore").write_text("experiments/benchmark/runs/\n")
    ok = run_dirs(store)["ok-1-r0"]
    assert HOME_TELL in (ok / README).read_text()
    code, out, err = bench("promote", ok.name)
    assert code == 0, out + err
    public = store / "runs" / "public" / "local" / ok.name / README
    text = public.read_text()
    assert "qzhang" not in text and "<path:home>" in text
    assert text.startswith(f"# {ok.name}\n")
