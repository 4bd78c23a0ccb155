"""Fixtures for the redaction tests: a policy that knows a small fleet, and real git repos."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from benchlab.redact.policy import KnownNames, Policy, RedactionConfig, StoreNames, build_policy

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "data" / "redact" / "corpus.json"


@pytest.fixture
def policy() -> Policy:
    """The corpus's fleet: known hosts, users and machine ids, as a store would teach them."""
    store = json.loads(CORPUS.read_text(encoding="utf-8"))["store"]
    names = StoreNames(set(store["hosts"]), set(store["users"]), set(store["machine_ids"]))
    return build_policy(RedactionConfig(known=KnownNames(instances=store["instances"])), names)


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=repo, check=True, capture_output=True, text=True, timeout=60
    )
    return done.stdout


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    """A real, empty git repository with a store in it."""
    repo = tmp_path / "repo"
    (repo / "experiments" / "benchmark").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / ".gitignore").write_text("experiments/benchmark/runs/\n")
    return repo
