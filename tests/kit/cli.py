"""`bench ARGS` in-process: the exit code and what it printed, without a subprocess."""

from __future__ import annotations

import pytest

from benchlab.cli import main


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run `bench *argv` through `benchlab.cli.main`; return (exit code, stdout, stderr).

    Output printed before the call is dropped first, so the result is this command's alone.
    """
    capsys.readouterr()
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err
