"""A device's env and workdir shape the number, so they shape the spec id and the series;
a config that sets neither keeps the ids it always had; env values never reach the catalog.

Injected for real: the same command point run under two OMP_NUM_THREADS values by
`bench run`, then `bench catalog build`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.kit.configs import write_sweep
from tests.sweep.lab import ONE_ATTEMPT, command_params, lab_config

from benchlab.catalog.read import load_catalog
from benchlab.cli import main
from benchlab.ids import settings_digest
from benchlab.sweep.expand import expand

SECRET = "tok-9f2c-do-not-publish"
CODE = (
    "import json, os; t = int(os.environ.get('OMP_NUM_THREADS', '1')); "
    "print(json.dumps(dict(decode=10.0 * t)))"
)


@pytest.fixture
def env(store: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    return store


def test_a_config_without_env_or_workdir_keeps_its_old_spec_ids() -> None:
    """Pinned: the ids these four points had before settings were hashed."""
    assert [spec.spec_id for spec in expand(lab_config())] == [
        "laptop-smollm2-135m-f32-batch-ed1a048b9a574653",
        "laptop-smollm2-135m-q8-batch-62dac2a3d52f7967",
        "pi5-smollm2-135m-f32-batch-26e9d9964e041d1c",
        "pi5-smollm2-135m-q8-batch-6477dfbdecbcba2c",
    ]
    assert settings_digest({}, None) is None and settings_digest(None, "") is None


@pytest.mark.parametrize(
    "device",
    [
        {"env": {"OMP_NUM_THREADS": "4"}},
        {"env": {"OMP_NUM_THREADS": "8"}},
        {"workdir": "/opt/bench/llama.cpp-b4000"},
        {"workdir": "/opt/bench/llama.cpp-b4100"},
        {"env": {"OMP_NUM_THREADS": "4"}, "workdir": "/opt/bench/llama.cpp-b4000"},
    ],
)
def test_env_and_workdir_each_give_the_point_its_own_spec_id(device: dict[str, Any]) -> None:
    base = [spec.spec_id for spec in expand(lab_config())]
    devices = {
        "laptop": {"transport": "local", **device},
        "pi5": {"transport": "local"},
    }
    changed = [spec.spec_id for spec in expand(lab_config(devices=devices))]
    assert changed[:2] != base[:2] and len(set(changed[:2]) & set(base)) == 0
    assert changed[2:] == base[2:]  # the other device's points are as they were


def config(tmp_path: Path, threads: str) -> Path:
    return write_sweep(
        tmp_path / f"omp{threads}.yaml",
        experiment="omp",
        policies=ONE_ATTEMPT,
        devices={
            "local": {
                "transport": "local",
                "env": {"OMP_NUM_THREADS": threads, "API_TOKEN": SECRET},
            }
        },
        matrix={"backend": "command", "params": command_params(CODE)},
    )


def test_a_changed_env_is_a_new_point_and_a_new_series_and_its_values_stay_private(
    tmp_path: Path, env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    two, four = config(tmp_path, "2"), config(tmp_path, "4")
    assert main(["run", str(two), "--quiet"]) == 0
    capsys.readouterr()
    # Before: the same spec id, so the point counted as done under other settings.
    assert main(["run", str(four), "--dry-run"]) == 0
    assert "1 point(s), 0 done, 1 to run" in capsys.readouterr().out
    assert main(["run", str(four), "--quiet"]) == 0
    assert main(["catalog", "build"]) == 0
    capsys.readouterr()
    runs = load_catalog(env / "catalog.json").runs
    assert sorted(run["decode_tok_per_sec"] for run in runs) == [20.0, 40.0]
    assert len({run["spec_id"] for run in runs}) == 2
    assert len({run["series"] for run in runs}) == 2  # never one history of two settings
    assert {run["settings"] for run in runs} == {
        settings_digest({"OMP_NUM_THREADS": t, "API_TOKEN": SECRET}, None) for t in ("2", "4")
    }
    published = [env / "catalog.json", *(env / "catalog").rglob("*"), *env.glob("machines/**/*")]
    for path in published:
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            assert SECRET not in text and "OMP_NUM_THREADS" not in text, path
    records = sorted((env / "runs" / "by-machine").glob("*/*/record.json"))
    assert len(records) == 2
    for record in records:
        identity = json.loads(record.read_text())["identity"]
        assert SECRET not in json.dumps(identity)
