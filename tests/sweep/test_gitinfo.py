"""manifest.git from a real repository: branch, detached HEAD, dirty, and no repository."""

from __future__ import annotations

import subprocess
from pathlib import Path

from benchlab.sweep.gitinfo import read_git_info


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True, timeout=30
    ).stdout.strip()


def test_branch_detached_dirty_and_none(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "a.txt").write_text("a")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-q", "-m", "one")
    sub = repo / "experiments" / "benchmark"
    sub.mkdir(parents=True)
    info = read_git_info(sub)
    assert info.rev == git(repo, "rev-parse", "--short=7", "HEAD")
    assert info.branch == "main" and info.dirty is False
    (repo / "a.txt").write_text("changed")
    assert read_git_info(repo).dirty is True
    git(repo, "checkout", "-q", "--detach")
    detached = read_git_info(repo)
    assert detached.branch is None and detached.rev == info.rev
    outside = tmp_path / "plain"
    outside.mkdir()
    assert read_git_info(outside).model_dump(exclude_none=True) == {}
    assert read_git_info(tmp_path / "missing").rev is None
