"""The harness's original command spelling works through the tools/bench_cli.py shim, as
a real process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from .conftest import LAPTOP_Q8

REPO = Path(__file__).resolve().parents[2]


def test_bench_cli_shim_best(golden: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            str(REPO / "tools" / "bench_cli.py"),
            "best",
            "--ever",
            "--model",
            "smollm2-135m",
            "--metric",
            "peak_tok_per_sec",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "BENCHLAB_STORE": str(golden)},
        check=False,
    )
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.splitlines()[2].startswith("anthony-laptop  SmolLM2-135M  q8")
    assert LAPTOP_Q8 in result.stdout


def test_bench_best_does_not_import_heavy_libraries(golden: Path) -> None:
    """Start-up stays light: no pydantic, rich, plotly or fabric for `bench best`."""
    code = (
        "import sys\n"
        "from benchlab.cli import main\n"
        "main(['best', '--model', 'smollm2-135m'])\n"  # cold: parses, writes the cache
        "main(['best', '--model', 'smollm2-135m'])\n"  # warm: reads the cache
        "heavy = {'pydantic', 'benchlab.models', 'rich', 'plotly', 'fabric', 'jinja2', 'numpy'}\n"
        "print(sorted(heavy & set(sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "BENCHLAB_STORE": str(golden)},
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "[]"
