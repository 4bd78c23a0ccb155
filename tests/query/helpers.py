"""Run `bench` in-process and capture what it printed."""

from __future__ import annotations

import pytest

from benchlab.cli import main


def bench(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err
