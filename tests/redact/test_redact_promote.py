"""`bench promote` in real git repositories: redact, scan, force-add, or refuse with why."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from tests.kit.runs import write_run

from benchlab.cli import main
from benchlab.models import Status

from .conftest import git

RUN = "gpu1-smollm2-135m-q8-batch-a1b2c3d4-20250106T120000Z"


def make_run(repo: Path, *, status: Status = "ok", run_id: str = RUN) -> Path:
    """A gpu1 run whose manifest and raw output are full of tells (host, zone, IP, home)."""
    store = repo / "experiments" / "benchmark"
    machine = store / "runs" / "by-machine" / "gpu1"
    machine.mkdir(parents=True, exist_ok=True)
    (machine / "specs.json").write_text(json.dumps({"machine_id": "gpu1", "hostname": "orca-7"}))
    return write_run(
        store,
        run_id,
        machine_id="gpu1",
        model_source="/home/qzhang/m.gguf",
        manifest_extra={
            "config": {"host": "orca-7", "zone": "us-east-1a", "workers": 16},
            "notes": "orca-7 (p4d.24xlarge, i-0abc1234def567890) via 10.0.0.5",
        },
        status=status,
        raw={
            "stdout.txt": "connected to orca-7 at 10.0.0.5\npp512 5523.67\n",
            "trace.bin": b"\0\x01orca-7",
        },
    )


@pytest.fixture
def repo(git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(git_repo)
    monkeypatch.setenv("BENCHLAB_STORE", str(git_repo / "experiments" / "benchmark"))
    return git_repo


def public(repo: Path, run_id: str = RUN) -> Path:
    return repo / "experiments" / "benchmark" / "runs" / "public" / "gpu1" / run_id


def staged(repo: Path) -> list[str]:
    return sorted(git(repo, "diff", "--cached", "--name-only").split())


def test_promote_writes_a_redacted_scanned_force_added_copy(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_run(repo)
    assert main(["promote", RUN]) == 0
    out = capsys.readouterr()
    assert "promoted" in out.out
    assert "left out (binary, cannot be checked): raw/trace.bin" in out.err
    copy = public(repo)
    manifest = json.loads((copy / "manifest.json").read_text())
    assert manifest["config"] == {"host": "<host:1>", "zone": "<zone:1>", "workers": 16}
    assert manifest["notes"] == "<host:1> (<machine-type:1>, <instance:1>) via <ip:1>"
    assert manifest["model"]["source"] == "<path:home>/m.gguf"
    # One mapping for the whole run: the same host is <host:1> in every file.
    assert (copy / "raw" / "stdout.txt").read_text() == (
        "connected to <host:1> at <ip:1>\npp512 5523.67\n"
    )
    assert not (copy / "raw" / "trace.bin").exists()
    prefix = f"experiments/benchmark/runs/public/gpu1/{RUN}"
    assert staged(repo) == [
        f"{prefix}/batch.json",
        f"{prefix}/kernel.json",
        f"{prefix}/manifest.json",
        f"{prefix}/raw/stdout.txt",
        f"{prefix}/record.json",
    ]
    assert main(["scan", str(copy)]) == 0


def test_dry_run_shows_replacements_and_writes_nothing(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_run(repo)
    assert main(["promote", RUN, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "manifest.json#/notes  host" in out and "-> <host:1>" in out
    assert "orca-7" not in out and "10.0.0.5" not in out
    assert "nothing written" in out
    assert not public(repo).exists()
    assert staged(repo) == []


def test_refuses_a_failed_run(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_run(repo, status="failed")
    assert main(["promote", RUN]) == 2
    err = capsys.readouterr().err
    assert "is not ok" in err and "'failed'" in err and "measurement" in err
    assert not public(repo).exists()


def test_refuses_a_run_already_promoted_and_unchanged(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = make_run(repo)
    assert main(["promote", RUN]) == 0
    assert main(["promote", RUN]) == 2
    assert "already promoted and unchanged" in capsys.readouterr().err
    # A changed run is promoted again, replacing the old copy.
    (run / "raw" / "stdout.txt").write_text("rerun\n")
    assert main(["promote", RUN]) == 0
    assert (public(repo) / "raw" / "stdout.txt").read_text() == "rerun\n"


def test_refuses_a_copy_that_still_scans_dirty_and_removes_it(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = repo / "experiments" / "benchmark"
    (store / "redaction.yaml").write_text(
        "patterns: [{name: ticket, class: secret, regex: 'LAB-TICKET-\\d+', redact: false}]\n"
    )
    run = make_run(repo)
    (run / "raw" / "notes.txt").write_text("see LAB-TICKET-4242\n")
    assert main(["promote", RUN]) == 2
    err = capsys.readouterr().err
    assert "still scans dirty" in err and "secret in raw/notes.txt at line 1" in err
    assert "LAB-TICKET-4242" not in err
    assert not public(repo).exists()
    assert list(public(repo).parent.iterdir()) == []  # no staging dir left either
    assert staged(repo) == []


def test_unknown_and_unsafe_run_ids(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["promote", "no-such-run"]) == 2
    assert "no run 'no-such-run'" in capsys.readouterr().err
    assert main(["promote", "../../etc"]) == 2
    assert "unsafe run id" in capsys.readouterr().err


def test_outside_git_nothing_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "nogit"
    (root / "experiments" / "benchmark").mkdir(parents=True)
    monkeypatch.setenv("BENCHLAB_STORE", str(root / "experiments" / "benchmark"))
    make_run(root)
    assert main(["promote", RUN]) == 2
    assert "not inside a git repository" in capsys.readouterr().err
    assert not public(root).exists()


# --- confinement: real symlinks, special files, and runs without a record -------------------


def by_machine(repo: Path) -> Path:
    return repo / "experiments" / "benchmark" / "runs" / "by-machine"


def assert_refused_and_nothing_written(
    repo: Path, capsys: pytest.CaptureFixture[str], *needles: str
) -> str:
    assert main(["promote", RUN]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("bench: error: ") and captured.err.count("\n") == 1
    assert "Traceback" not in captured.err
    for needle in needles:
        assert needle in captured.err, captured.err
    assert not public(repo).exists()
    assert "root:" not in captured.out + captured.err  # no line of /etc/passwd anywhere
    assert staged(repo) == []
    return captured.err


def test_a_run_dir_that_is_a_symlink_out_of_the_store_is_not_followed(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = tmp_path / "outside"
    make_run(outside)  # a complete, ok-looking run, but outside the store
    machine = by_machine(repo) / "gpu1"
    machine.mkdir(parents=True)
    (machine / RUN).symlink_to(by_machine(outside) / "gpu1" / RUN, target_is_directory=True)
    assert_refused_and_nothing_written(repo, capsys, "is a symlink")


def test_a_run_dir_symlinked_to_etc_is_refused(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    machine = by_machine(repo) / "gpu1"
    machine.mkdir(parents=True)
    (machine / RUN).symlink_to("/etc", target_is_directory=True)
    assert_refused_and_nothing_written(repo, capsys, "is a symlink")


def test_a_symlinked_machine_dir_is_refused(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = tmp_path / "outside"
    make_run(outside)
    by_machine(repo).mkdir(parents=True)
    (by_machine(repo) / "gpu1").symlink_to(by_machine(outside) / "gpu1")
    assert_refused_and_nothing_written(repo, capsys, "gpu1 is a symlink")


def test_a_symlinked_file_inside_a_run_is_refused(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = make_run(repo)
    (run / "raw" / "passwd.txt").symlink_to("/etc/passwd")
    assert_refused_and_nothing_written(repo, capsys, "passwd.txt is a symlink")


def test_a_symlinked_subdir_inside_a_run_is_refused(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = make_run(repo)
    (run / "raw" / "etc").symlink_to("/etc", target_is_directory=True)
    assert_refused_and_nothing_written(repo, capsys, "etc is a symlink")


def test_a_fifo_inside_a_run_is_refused_without_blocking(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = make_run(repo)
    os.mkfifo(run / "raw" / "pipe.txt")
    assert_refused_and_nothing_written(repo, capsys, "not a regular file")


def test_a_symlinked_record_is_refused(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = make_run(repo, status="failed")
    fake = tmp_path / "record.json"
    fake.write_text(json.dumps({"run_id": RUN, "status": "ok"}))
    (run / "record.json").unlink()
    (run / "record.json").symlink_to(fake)
    assert_refused_and_nothing_written(repo, capsys, "record.json is a symlink")


def test_a_record_less_dir_is_not_ok(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = make_run(repo)
    (run / "record.json").unlink()
    assert_refused_and_nothing_written(repo, capsys, "no record.json")


def test_a_record_of_another_run_is_refused(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = make_run(repo)
    (run / "record.json").write_text(json.dumps({"run_id": "other-run", "status": "ok"}))
    assert_refused_and_nothing_written(repo, capsys, "record of 'other-run'")


def test_a_hostile_record_is_one_line(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = make_run(repo)
    (run / "record.json").write_bytes(b"[" * 100_000)
    assert_refused_and_nothing_written(repo, capsys, "record.json", "nested too deep")


def test_an_import_with_provenance_is_promoted_without_a_record(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = make_run(repo)
    (run / "record.json").unlink()
    manifest = json.loads((run / "manifest.json").read_text())
    manifest.update(mode="import", provenance={"source": "llama-bench", "sha256": "ab" * 32})
    (run / "manifest.json").write_text(json.dumps(manifest))
    for name in ("kernel.json", "batch.json"):
        (run / name).write_text("{}")
    assert main(["promote", RUN]) == 0
    assert (public(repo) / "manifest.json").is_file()
    # Without provenance the same dir is refused.
    manifest.pop("provenance")
    (run / "manifest.json").write_text(json.dumps(manifest))
    (run / "raw" / "stdout.txt").write_text("changed\n")
    assert main(["promote", RUN]) == 2
    assert "not an import with provenance" in capsys.readouterr().err


CLUSTER_LOG = (
    "node gke-prod-pool-1-abc123-xyz9 Ready\n"
    "cd /root/src/llama.cpp && make -j\n"
    "<serial>ABC123</serial>\n"
    "resource group rg-bench-prod-eastus\n"
    '"topo": "GPU0\\t X \\tNV12\\tNV12\\t0-63\\t0"\n'
    "pp512 5523.67\n"
)


def test_raw_logs_with_cluster_tells_are_scrubbed_and_a_scan_of_a_raw_copy_finds_them(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Node pools, root checkouts, serial elements, resource groups and inline topo rows
    in a raw log: promote publishes none of them, and `bench scan` finds each in a copy
    that was force-added by hand."""
    run_dir = make_run(repo)
    (run_dir / "raw" / "stderr.txt").write_text(CLUSTER_LOG)
    assert main(["promote", RUN]) == 0
    capsys.readouterr()
    published = (public(repo) / "raw" / "stderr.txt").read_text()
    for tell in ("abc123-xyz9", "/root/src", "ABC123", "rg-bench-prod", "NV12"):
        assert tell not in published, tell
    assert published.endswith("pp512 5523.67\n")
    assert main(["scan", str(public(repo))]) == 0
    by_hand = tmp_path / "by-hand"
    by_hand.mkdir()
    (by_hand / "stderr.txt").write_text(CLUSTER_LOG)
    capsys.readouterr()
    assert main(["scan", "--format", "json", str(by_hand)]) == 1
    found = {f["tell_class"] for f in json.loads(capsys.readouterr().out)["findings"]}
    assert found == {"k8s", "site-path", "hardware-id", "cloud-account", "topology"}
