"""`bench scan`: findings with class, file, pointer or line, masked excerpts, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchlab.cli import main

from .conftest import git

SECRET = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"


@pytest.fixture
def scan_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "scan"
    root.mkdir()
    monkeypatch.chdir(root)
    return root


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict]:
    code = main(["scan", "--format", "json", *args])
    return code, json.loads(capsys.readouterr().out)


def test_json_file_findings_carry_a_pointer_and_mask(
    scan_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = {
        "runs": [{"model": "Q4_K_M"}, {"notes": f"ran on 10.1.2.3 token {SECRET}"}],
        "hostname": "somebox",
    }
    (scan_dir / "catalog.json").write_text(json.dumps(doc))
    code, out = run_json(capsys, "catalog.json")
    assert code == 1
    found = {(f["tell_class"], f["where"]) for f in out["findings"]}
    assert found == {("ip", "/runs/1/notes"), ("secret", "/runs/1/notes"), ("host", "/hostname")}
    text = json.dumps(out)
    assert SECRET not in text and "10.1.2.3" not in text and "somebox" not in text
    assert "ran on [ip] token [secret]" in text


def test_text_findings_carry_a_line(scan_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (scan_dir / "raw").mkdir()
    (scan_dir / "raw" / "stdout.txt").write_text("ok\nmodel Q8_0\ncwd /home/qzhang/x\n")
    code = main(["scan", "raw"])
    captured = capsys.readouterr()
    assert code == 1
    assert "home-path" in captured.out and "line 3" in captured.out
    assert "raw/stdout.txt" in captured.out
    assert "qzhang" not in captured.out + captured.err
    assert "1 tells in 1 files" in captured.err


def test_clean_files_exit_zero_and_binary_is_skipped(
    scan_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (scan_dir / "kernel.json").write_text(json.dumps({"engine": "fak Q8_0", "tok": 128.2}))
    (scan_dir / "chart.png").write_bytes(b"\x89PNG\0\0 10.0.0.1")
    code, out = run_json(capsys, ".")
    assert code == 0 and out["clean"] and out["files_scanned"] == 1
    assert out["skipped_binary"] == ["chart.png"]


def test_file_names_are_scanned(scan_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (scan_dir / "gpu-box-7.corp").mkdir()
    (scan_dir / "gpu-box-7.corp" / "topo.txt").write_text("clean\n")
    code, out = run_json(capsys, ".")
    assert code == 1
    assert [f["where"] for f in out["findings"]] == ["file name"]


def test_missing_path_is_exit_2(scan_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scan", "nope"]) == 2
    assert capsys.readouterr().err.strip() == "bench: error: nope: no such file or directory"


def test_tracked_outside_git_is_exit_2(scan_dir: Path) -> None:
    assert main(["scan", "--tracked"]) == 2


def test_tracked_and_staged_in_a_real_repo(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(git_repo)
    store = git_repo / "experiments" / "benchmark"
    (store / "redaction.yaml").write_text("allow: {paths: ['corpus/**']}\n")
    (git_repo / "corpus").mkdir()
    (git_repo / "corpus" / "tells.txt").write_text("10.0.0.1\n")
    (git_repo / "README.md").write_text("model SmolLM2-135M on A100\n")
    git(git_repo, "add", ".")
    git(git_repo, "commit", "-q", "-m", "one")
    # Ignored private runs are not tracked, so not scanned.
    private = store / "runs" / "by-machine" / "m"
    private.mkdir(parents=True)
    (private / "specs.json").write_text(json.dumps({"hostname": "zed-box"}))
    code, out = run_json(capsys, "--tracked")
    assert code == 0 and out["skipped_allowed"] == 1

    # Staged content is what counts, not the working tree.
    (git_repo / "notes.md").write_text("deployed on zed-box\n")
    git(git_repo, "add", "notes.md")
    (git_repo / "notes.md").write_text("deployed somewhere\n")
    code, out = run_json(capsys, "--staged")
    assert code == 1
    assert [(f["path"], f["tell_class"], f["where"]) for f in out["findings"]] == [
        ("notes.md", "host", "line 1")
    ]
    # The working tree no longer has it; tracked reads the working tree.
    code, _ = run_json(capsys, "--tracked")
    assert code == 0


def test_staged_in_a_repo_without_commits(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(git_repo)
    (git_repo / "a.txt").write_text("box at 192.168.7.7\n")
    git(git_repo, "add", "a.txt")
    code, out = run_json(capsys, "--staged")
    assert code == 1 and out["findings"][0]["tell_class"] == "ip"


@pytest.mark.slow
def test_this_repository_scans_clean(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CI gate: every tracked file of benchlab itself passes `bench scan --tracked`."""
    from .conftest import REPO

    monkeypatch.chdir(REPO)
    assert main(["scan", "--tracked"]) == 0


@pytest.mark.slow
def test_pre_commit_hook_blocks_a_commit_with_a_tell(git_repo: Path) -> None:
    import shutil
    import subprocess

    from .conftest import REPO

    hook = git_repo / ".git" / "hooks" / "pre-commit"
    shutil.copy(REPO / "tools" / "hooks" / "pre-commit", hook)
    (git_repo / "ok.md").write_text("SmolLM2-135M Q4_K_M on RTX 4070: 128.2 tok/s\n")
    git(git_repo, "add", "ok.md")
    git(git_repo, "commit", "-q", "-m", "clean")
    (git_repo / "leak.md").write_text("ran on ip-10-0-0-1.ec2.internal\n")
    git(git_repo, "add", "leak.md")
    done = subprocess.run(
        ["git", "commit", "-q", "-m", "leak"],
        cwd=git_repo,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    output = done.stdout + done.stderr  # git sends a hook's output to stderr
    assert "leak.md" in output and "[host]" in output
    assert "ip-10-0-0-1" not in output
    assert git(git_repo, "log", "--format=%s").split() == ["clean"]
