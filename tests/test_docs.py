"""The project docs (mkdocs.yml, docs/) build with `mkdocs build --strict`, offline, and their
generated reference covers the whole CLI and every schema; the README stays a front door."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[1]
README_MAX_LINES = 150


def _reference() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "docs_reference", REPO / "tools" / "docs_reference.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if importlib.util.find_spec("material") is None:
        pytest.skip("pip install -e '.[site]'")
    out = tmp_path_factory.mktemp("docs") / "build"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


@pytest.mark.integration
@pytest.mark.slow
def test_the_docs_build_strict_and_load_nothing_from_the_network(built: Path) -> None:
    pages = sorted(built.rglob("*.html"))
    assert (built / "index.html").is_file() and len(pages) > 10
    remote = re.compile(r"""(?:src|href)=["']https?://""")
    assert [p.name for p in pages if remote.search(p.read_text(encoding="utf-8"))] == []
    assert (built / "search" / "search_index.json").is_file()


@pytest.mark.integration
@pytest.mark.slow
def test_the_cli_reference_names_every_verb(built: Path) -> None:
    page = (built / "reference" / "cli.html").read_text(encoding="utf-8")
    verbs = _reference().verbs()
    assert {"bench list", "bench catalog build", "bench site build"} <= set(verbs)
    missing = [v for v in verbs if f'id="{v.replace(" ", "-")}"' not in page]
    assert missing == []


@pytest.mark.integration
@pytest.mark.slow
def test_the_formats_page_has_every_schema(built: Path) -> None:
    page = (built / "reference" / "formats.html").read_text(encoding="utf-8")
    schemas = sorted(p.stem for p in (REPO / "schemas").glob("*.json"))
    assert len(schemas) > 5
    assert [s for s in schemas if f"schemas/{s}.json" not in page] == []


def test_the_reference_pages_are_generated_from_the_code() -> None:
    """A verb added to `bench` appears in the reference without anyone writing it there."""
    reference = _reference()
    cli = reference.cli_markdown()
    assert all(f"# {verb}\n" in cli for verb in reference.verbs())
    assert "| `--store DIR` |" in cli
    formats = reference.formats_markdown()
    assert "## run-record.v1" in formats and "| `run_id` | string | yes |" in formats


def test_the_readme_is_a_front_door() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= README_MAX_LINES
    assert "tools/test.sh" in readme and "dvc repro" in readme
    assert "mkdocs build --strict" in readme  # where to read on
