"""The test command's two lanes, the type check and CI's Python versions.

tools/test.sh is run for real, in a copy of the tools dir, with `ruff`, `bench` and `python3`
on PATH replaced by scripts that write down how they were called: what is checked is which
steps each lane runs, in which order and with which pytest selection, not the steps' own
results (the suite does not run itself).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pytest's own TOML reader
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
RECORDER = '#!/bin/sh\necho "$(basename "$0") $*" >> "$CALLS"\n'


def _pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def _run_test_sh(tmp_path: Path, *args: str) -> list[str]:
    """Run a copy of tools/test.sh with recording stand-ins; the calls it made, in order."""
    (tmp_path / "tools").mkdir()
    shutil.copy2(REPO / "tools" / "test.sh", tmp_path / "tools" / "test.sh")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("ruff", "bench", "python3"):
        (bin_dir / name).write_text(RECORDER)
        (bin_dir / name).chmod(0o755)
    calls = tmp_path / "calls"
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "CALLS": str(calls), "HOME": str(tmp_path)}
    subprocess.run(
        ["bash", str(tmp_path / "tools" / "test.sh"), *args],
        env=env,
        check=True,
        timeout=60,
        capture_output=True,
    )
    return calls.read_text().splitlines()


def test_fast_lane_is_lint_types_and_the_unit_and_property_tests(tmp_path: Path) -> None:
    calls = _run_test_sh(tmp_path, "--fast", "-x", "tests/catalog")
    assert calls == [
        "ruff check .",
        "ruff format --check .",
        "python3 -m mypy",
        "python3 -m pytest -q --durations=15 -m not integration and not slow -x tests/catalog",
    ]


def test_full_lane_is_the_default_and_runs_every_test(tmp_path: Path) -> None:
    calls = _run_test_sh(tmp_path, "-k", "merge")
    assert calls == [
        "ruff check .",
        "ruff format --check .",
        "python3 -m mypy",
        "bench schemas",
        "bench scan --tracked",
        "python3 -m pytest -q --durations=15 -k merge",
    ]


def test_the_markers_the_fast_lane_deselects_are_declared() -> None:
    declared = {m.split(":")[0] for m in _pyproject()["tool"]["pytest"]["ini_options"]["markers"]}
    assert {"integration", "slow"} <= declared


def test_mypy_is_a_dev_tool_and_strict_on_the_whole_package() -> None:
    project = _pyproject()
    assert any(re.match(r"mypy\b", d) for d in project["project"]["optional-dependencies"]["dev"])
    config = project["tool"]["mypy"]
    assert config["strict"] is True
    assert config["files"] == ["src/benchlab"]


def test_mypy_with_the_repo_config_refuses_an_unannotated_function(tmp_path: Path) -> None:
    """The configuration really is strict: what plain mypy accepts, it refuses."""
    loose = tmp_path / "loose.py"
    loose.write_text("def double(x):\n    return x * 2\n")
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml"),
         "--cache-dir", str(tmp_path / "cache"), str(loose)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 1, result.stdout + result.stderr
    assert "no-untyped-def" in result.stdout


def test_ci_runs_on_the_lowest_and_the_newest_python() -> None:
    floor = re.fullmatch(r">=\s*(3\.\d+)", _pyproject()["project"]["requires-python"])
    assert floor, "requires-python is no longer a plain floor: update this test and ci.yml"
    workflow = yaml.safe_load((REPO / ".github" / "workflows" / "ci.yml").read_text())
    job = workflow["jobs"]["test"]
    versions = job["strategy"]["matrix"]["python-version"]
    assert versions[0] == floor.group(1)
    assert versions[-1] == "3.13"
    setup = next(s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/setup-p"))
    assert setup["with"]["python-version"] == "${{ matrix.python-version }}"


def test_no_test_prints_to_the_terminal() -> None:
    """pytest's dots are the whole output of a passing suite: a test says what it found in
    an assertion's message (shown where it fails), never with print(). Scripts a test writes
    out as strings (fakes, agents) are text, not calls, and are not counted."""
    import ast

    found = []
    for path in sorted((REPO / "tests").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "print"
            ):
                found.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert found == [], f"print() in tests: {', '.join(found)}"
