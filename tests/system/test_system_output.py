"""`bench system` prints what sysfs and /proc hold, which benchlab does not control: control
characters reach the terminal escaped, JSON never holds NaN, and a FIFO or a link planted in
the tree is "unknown", never waited on (ARCHITECTURE.md, One reader, one writer path). Run
as a user would, in its own process, on a fake sysfs root."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.agent.fakes import fake_machine

HOSTILE = "\x1b]0;owned\x07\x1b[2J\x1b[31mperformance\r"


def _system(root: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchlab", "system", "--root", str(root), *argv],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "BENCHLAB_SYSFS_ROOT": str(root)},
    )


def test_escape_and_osc_sequences_from_sysfs_are_escaped(tmp_path: Path) -> None:
    root = fake_machine(tmp_path / "root", governor=HOSTILE)
    done = _system(root)
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout and "\r" not in done.stdout
    assert "\\x1b]0;owned\\x07\\x1b[2J\\x1b[31mperformance" in done.stdout


def test_json_holds_no_nan_and_no_raw_control(tmp_path: Path) -> None:
    root = fake_machine(tmp_path / "root", governor=HOSTILE, load="nan inf -inf 1/100 1")
    done = _system(root, "--format", "json")
    assert done.returncode == 0, done.stderr
    assert "NaN" not in done.stdout and "Infinity" not in done.stdout
    data = json.loads(done.stdout, parse_constant=lambda name: pytest_fail(name))
    assert data["state"]["governors"] == [HOSTILE.strip()]  # the same value, escaped in JSON
    assert "\x1b" not in done.stdout


def pytest_fail(name: str) -> None:
    raise AssertionError(f"JSON holds {name}")


def test_a_fifo_or_a_link_in_the_tree_is_unknown_not_a_hang(tmp_path: Path) -> None:
    root = fake_machine(tmp_path / "root")
    loadavg = root / "proc" / "loadavg"
    loadavg.unlink()
    os.mkfifo(loadavg)
    meminfo = root / "proc" / "meminfo"
    meminfo.unlink()
    meminfo.symlink_to("/dev/zero")
    done = _system(root)
    assert done.returncode == 0, done.stderr
    assert "load average (1, 5, 15 min)  unknown" in done.stdout
    assert "swap in use (MB)             unknown" in done.stdout


def test_the_cli_stream_escapes_c0_c1_and_bidi_but_newline_and_tab(capsys) -> None:
    from benchlab.textout import SafeStream

    stream = SafeStream(sys.stdout)
    stream.write("a\tb\n\x1b[31m\x9b\x7f\x00é\u202e\n")
    assert capsys.readouterr().out == "a\tb\n\\x1b[31m\\x9b\\x7f\\x00é\\u202e\n"
