"""Catalog test helpers: the synthetic fleet generator and a CLI runner."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from benchlab.cli import main

REPO = Path(__file__).resolve().parents[2]


def load_make_fleet() -> ModuleType:
    """tools/perf/make_fleet.py is a script, not a package module: load it by path."""
    name = "benchlab_tools_make_fleet"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, REPO / "tools" / "perf" / "make_fleet.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def make_fleet() -> Callable[..., list[str]]:
    return load_make_fleet().make_fleet


@pytest.fixture
def bench(
    capsys: pytest.CaptureFixture[str],
) -> Callable[..., tuple[int, str, str]]:
    """Run `bench ARGS` in-process; return (exit code, stdout, stderr)."""

    def run(*args: str) -> tuple[int, str, str]:
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    return run
