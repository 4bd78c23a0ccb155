"""Order plug-ins without PYTHONPATH: a module beside the sweep file, one in a
$BENCHLAB_PLUGIN_PATH dir, and one named by an installed distribution's entry point."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from tests.kit.configs import write_sweep
from tests.kit.plugins import install_plugin
from tests.sweep.lab import command_params

from benchlab.cli import main
from benchlab.sweep.order import ENTRY_POINT_GROUP, PLUGIN_PATH_ENV

REVERSE = """
def reverse(specs, *, seed, device):
    return list(reversed(specs))
"""


def _sweep(path: Path, order: str) -> Path:
    return write_sweep(
        path,
        experiment="plug",
        policies={"order": order},
        matrix={
            "precision": ["f32", "q8"],
            "backend": "command",
            "params": command_params("print(1)"),
        },
    )


def _reversed(out: str) -> bool:
    lines = out.splitlines()
    return " q8 " in lines[1] and " f32 " in lines[2]


@pytest.fixture
def clean_import(monkeypatch: pytest.MonkeyPatch) -> None:
    """sys.path and sys.modules as they were, whatever a plug-in import adds."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "modules", dict(sys.modules))


def test_a_plugin_beside_the_sweep_file_needs_no_pythonpath(tmp_path: Path, store: Path) -> None:
    sweeps = tmp_path / "sweeps"
    sweeps.mkdir()
    (sweeps / "lab_orders_beside.py").write_text(REVERSE)
    path = _sweep(sweeps / "plug.yaml", "lab_orders_beside:reverse")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", PLUGIN_PATH_ENV)}
    env["BENCHLAB_STORE"] = str(store)
    done = subprocess.run(
        [sys.executable, "-m", "benchlab", "run", str(path), "--dry-run"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert _reversed(done.stdout), done.stdout


def test_a_plugin_in_a_plugin_path_dir_and_a_missing_one(
    tmp_path: Path, store: Path, monkeypatch: pytest.MonkeyPatch, capsys, clean_import: None
) -> None:
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    shared = tmp_path / "shared-plugins"
    shared.mkdir()
    (shared / "lab_orders_shared.py").write_text(REVERSE)
    path = _sweep(tmp_path / "plug.yaml", "lab_orders_shared:reverse")
    monkeypatch.delenv(PLUGIN_PATH_ENV, raising=False)
    assert main(["run", str(path), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{path}: policies.order: cannot import" in err
    assert str(tmp_path) in err  # the sweep file's dir was looked in, and says so
    monkeypatch.setenv(PLUGIN_PATH_ENV, str(shared))
    assert main(["run", str(path), "--dry-run"]) == 0
    assert _reversed(capsys.readouterr().out)
    assert str(shared) not in sys.path  # on sys.path for the import only


def test_an_installed_entry_point_names_a_policy(
    tmp_path: Path, store: Path, monkeypatch: pytest.MonkeyPatch, capsys, clean_import: None
) -> None:
    """A real distribution (dist-info with entry_points.txt) on sys.path, as pip leaves one."""
    site = tmp_path / "site-packages"
    entry = "lab-backwards = lab_order_dist_mod:reverse"
    install_plugin(site, "lab-order-dist", ENTRY_POINT_GROUP, entry, "lab_order_dist_mod", REVERSE)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("BENCHLAB_STORE", str(store))
    (found,) = [
        ep for ep in metadata.entry_points(group=ENTRY_POINT_GROUP) if ep.name == "lab-backwards"
    ]
    assert found.dist is not None and found.dist.name == "lab-order-dist"
    assert main(["run", str(_sweep(tmp_path / "plug.yaml", "lab-backwards")), "--dry-run"]) == 0
    assert _reversed(capsys.readouterr().out)
