"""`benchlab.files`, the one guarded reader and the writer path check (ARCHITECTURE.md, One
reader and one writer path), on real files: links, FIFOs, devices and caps."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from benchlab import files
from benchlab.errors import StoreError, UnsafePathError
from benchlab.layout import atomic_write_bytes


def test_a_regular_file_reads_and_an_absent_one_is_none(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_bytes(b"{}")
    assert files.read_bytes(tmp_path / "a.json", root=tmp_path) == b"{}"
    assert files.read_optional(tmp_path / "b.json") is None
    with pytest.raises(StoreError, match=r"b\.json: cannot read"):
        files.read_bytes(tmp_path / "b.json")


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "dir"])
def test_no_regular_file_is_refused_without_waiting(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "x"
    if kind == "fifo":
        os.mkfifo(path)
        expected = "FIFO"
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
        expected = "symbolic link"
    else:
        path.mkdir()
        expected = "directory"
    with pytest.raises(UnsafePathError, match=expected):
        files.read_bytes(path)
    with pytest.raises(UnsafePathError, match=expected):
        files.read_optional(path)


def test_a_link_in_a_dir_between_root_and_file_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("x")
    root = tmp_path / "repo"
    root.mkdir()
    (root / "machines").symlink_to(outside, target_is_directory=True)
    with pytest.raises(UnsafePathError, match="machines is a symbolic link"):
        files.read_bytes(root / "machines" / "secret", root=root)
    assert files.read_bytes(root / "machines" / "secret") == b"x"  # no root: last part only


def test_a_file_over_its_cap_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "big"
    with path.open("wb") as handle:
        handle.truncate(1 << 30)  # sparse: nothing written
    with pytest.raises(UnsafePathError, match="over the 1024-byte cap"):
        files.read_bytes(path, cap=1024)


def test_prepare_write_makes_real_dirs_and_refuses_links(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    made = files.prepare_write(root / "a" / "b" / "c.json", root)
    assert made == [root / "a", root / "a" / "b"] and (root / "a" / "b").is_dir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "charts").symlink_to(outside, target_is_directory=True)
    with pytest.raises(UnsafePathError, match="charts is a symbolic link"):
        atomic_write_bytes(root / "charts" / "x.html", b"x", root=root)
    (root / "file.json").symlink_to(outside / "target.json")
    with pytest.raises(UnsafePathError, match="a symbolic link"):
        files.prepare_write(root / "file.json", root)
    with pytest.raises(UnsafePathError, match="outside"):
        files.prepare_write(tmp_path / "elsewhere.json", root)
    assert list(outside.iterdir()) == []


def test_repository_root_is_the_nearest_git_dir(tmp_path: Path) -> None:
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    assert files.repository_root(tmp_path / "repo" / "site" / "build") == tmp_path / "repo"
