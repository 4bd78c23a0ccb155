"""Shared fixtures: keep the user's environment, ssh config and store out of every test."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from tests.kit.cli import run_cli


@pytest.fixture(scope="session")
def _quiet_machine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A /proc + /sys tree of an idle machine: sweeps warn about a busy one before they
    start, and a test must not depend on how busy the box running it is."""
    root = tmp_path_factory.mktemp("quiet-machine")
    (root / "proc").mkdir()
    (root / "proc" / "loadavg").write_text("0.00 0.00 0.00 1/100 1\n")
    (root / "proc" / "meminfo").write_text("SwapTotal: 0 kB\nSwapFree: 0 kB\n")
    return root


@pytest.fixture(autouse=True)
def _isolated_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, _quiet_machine: Path
) -> None:
    """No test reads the developer's ~/.ssh/config, store, git identity or machine state
    (BENCHLAB_SYSFS_ROOT: the agent reads /proc and /sys under it)."""
    monkeypatch.setenv("BENCHLAB_SYSFS_ROOT", str(_quiet_machine))
    monkeypatch.delenv("BENCHLAB_STORE", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("GIT_AUTHOR_NAME", "benchlab test")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "test@benchlab.invalid")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "benchlab test")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "test@benchlab.invalid")
    monkeypatch.setenv("DVC_NO_ANALYTICS", "1")
    monkeypatch.setenv("NO_MKDOCS_2_WARNING", "1")
    monkeypatch.setenv("BENCHLAB_BANDWIDTH_PROBE", "off")
    monkeypatch.delenv("COLUMNS", raising=False)  # tables fit $COLUMNS where it is set


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """An empty store root, pointed to by $BENCHLAB_STORE."""
    root = tmp_path / "repo" / "experiments" / "benchmark"
    root.mkdir(parents=True)
    return root


@pytest.fixture
def bench(capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str, str]]:
    """Run `bench ARGS` in-process: `code, out, err = bench("list", "--model", "x")`."""

    def run(*argv: str) -> tuple[int, str, str]:
        return run_cli(capsys, *argv)

    return run
