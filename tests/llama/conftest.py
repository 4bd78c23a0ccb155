"""Fixtures for the real llama.cpp tests: one cached build and one tiny model per session.

A cold cache costs one build (a few minutes on 2 cores); a warm one costs nothing. The
helpers live in llama_tools.py (importable by the tests).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from llama_tools import CACHE, build_tool, models_tool


def _need_toolchain() -> None:
    missing = [name for name in ("cmake", "ninja", "g++") if shutil.which(name) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} (tools/ci-setup.sh installs them)")
    if importlib.util.find_spec("gguf") is None:
        pytest.skip("needs the gguf package (pip install -e '.[dev]')")


@pytest.fixture(scope="session")
def llama_build() -> Any:
    """The default version's build (built here on a cold cache)."""
    _need_toolchain()
    return build_tool.ensure_build(build_tool.DEFAULT_VERSION, cache_dir=CACHE)


@pytest.fixture(scope="session")
def tiny_model(llama_build: Any) -> Path:
    """The cached tiny f32 GGUF."""
    return models_tool.ensure_model("tiny", "f32", cache_dir=CACHE)


@pytest.fixture(scope="session")
def older_build(llama_build: Any) -> Any:
    """The older version's build, for two-build comparisons. Building it is opt-in when it is
    not cached (BENCHLAB_LLAMA_BOTH=1), to keep a cold run of tests/llama to one build."""
    older = build_tool.OLDER_VERSION
    if not (CACHE / older / build_tool.MANIFEST).is_file() and (
        os.environ.get("BENCHLAB_LLAMA_BOTH") != "1"
    ):
        pytest.skip(f"python tools/llama/build.py --version {older} (or BENCHLAB_LLAMA_BOTH=1)")
    return build_tool.ensure_build(older, cache_dir=CACHE)
