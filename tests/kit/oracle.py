"""The oracles some tests hold benchlab to (asv, llama.cpp's compare-llama-bench.py,
promtool): a test whose oracle is missing skips on a developer's machine, and fails in CI
(`CI=true`, as GitHub Actions sets it), where a skip would be a failure of the test setup
passed off as a pass (tools/ci-setup.sh installs every oracle)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def need(present: bool, reason: str) -> None:
    """Go on where `present`; else skip, or fail in CI, saying what is missing."""
    if present:
        return
    if in_ci():
        pytest.fail(f"CI=true and {reason}: tools/ci-setup.sh must install it", pytrace=False)
    pytest.skip(reason)


def need_programs(*names: str, reason: str) -> None:
    need(all(shutil.which(name) is not None for name in names), reason)


def need_modules(*names: str, reason: str) -> None:
    need(all(importlib.util.find_spec(name) is not None for name in names), reason)


def promtool_accepts(text: str, *, optional: bool = False) -> None:
    """`promtool check metrics` passes `text`. Without promtool: skip (fail in CI), or, with
    `optional`, check nothing and let the test's other checks stand."""
    if optional and shutil.which("promtool") is None:
        return
    need_programs("promtool", reason="promtool (Debian's prometheus) absent")
    check = subprocess.run(
        ["promtool", "check", "metrics"],
        input=text,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert check.returncode == 0, check.stdout + check.stderr
