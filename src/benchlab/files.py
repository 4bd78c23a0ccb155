"""The one guarded reader, and the one writer path check (ARCHITECTURE.md, One reader and one
writer path).

Every file benchlab reads (heads, shards, marks, run files, imported results, sysfs and tool
output) is opened here: without following a link (O_NOFOLLOW; with a `root`, no component
between the root and the file may be a link either, checked by opening each dir in turn
relative to the one before), without blocking (O_NONBLOCK: a FIFO opens at once and is then
refused, never waited on), checked to be a regular file (fstat: a FIFO, a device, a socket
or a dir is refused) and read up to a size cap (a larger file is refused before it is read;
one that grows past the cap while read is refused too). Every refusal is one
`UnsafePathError` naming the file; any other failure (absent, no permission) one
`StoreError`.

Every output under the repository is placed with `prepare_write` / `ensure_dir`: each
component between the root and the file must be a real dir (a missing one is made, never
through a link) and the file itself may not be a link, so a committed symlink at
`machines/`, `charts/` or `site/build` can never send a write outside the repository.

The module imports only the standard library and `benchlab.errors`: everything else in
benchlab may use it.
"""

from __future__ import annotations

import errno
import os
import stat as stat_mod
from pathlib import Path
from typing import BinaryIO

from benchlab.errors import ConfigError, StoreError, UnsafePathError

DEFAULT_CAP = 256 * 1024 * 1024
"""The cap of a read that names none: the largest JSON document benchlab parses."""
SMALL_CAP = 1024 * 1024
"""For sysfs/proc values, tool output captured to a file, config files and the like."""

_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = (
    os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
)
_CHUNK = 1 << 20

PathLike = Path | str


def file_kind(mode: int) -> str:
    """What a non-regular file is, in words."""
    for test, kind in (
        (stat_mod.S_ISFIFO, "a FIFO"),
        (stat_mod.S_ISCHR, "a character device"),
        (stat_mod.S_ISBLK, "a block device"),
        (stat_mod.S_ISSOCK, "a socket"),
        (stat_mod.S_ISDIR, "a directory"),
        (stat_mod.S_ISLNK, "a symbolic link"),
    ):
        if test(mode):
            return kind
    return "not a plain file"


def _parts_below(path: PathLike, root: PathLike) -> list[str]:
    """The components of `path` below `root` (lexically: `..` is resolved by name, links
    are not followed); a path outside its root is refused."""
    full = os.path.abspath(path)
    base = os.path.abspath(root)
    rel = os.path.relpath(full, base)
    if rel == os.curdir or rel == os.pardir or rel.startswith(os.pardir + os.sep):
        raise UnsafePathError(f"{path}: outside {root}; refused")
    return rel.split(os.sep)


def _link_error(path: PathLike, what: str) -> UnsafePathError:
    return UnsafePathError(f"{path}: {what} is a symbolic link (never followed); refused")


def _open_dir_chain(path: PathLike, root: PathLike, parts: list[str]) -> int:
    """A descriptor of the dir holding the last of `parts`, reached from `root` by opening
    each dir relative to the one before, never through a link."""
    fd = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    walked = Path(root)
    try:
        for part in parts[:-1]:
            walked = walked / part
            try:
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(walked):
                    raise _link_error(path, str(walked)) from None
                raise
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open(path: PathLike, root: PathLike | None) -> int:
    """A descriptor of `path` opened by the rules above; OSError for anything else."""
    if root is None:
        return os.open(path, _FLAGS)
    parts = _parts_below(path, root)
    dir_fd = _open_dir_chain(path, root, parts)
    try:
        return os.open(parts[-1], _FLAGS, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)


def _open_checked(
    path: PathLike, root: PathLike | None, cap: int, name: str | None = None
) -> tuple[int, os.stat_result]:
    """(descriptor, stat) of a regular file no larger than `cap`; errors name the file
    as `name` (default: its path)."""
    where = path if name is None else name
    try:
        fd = _open(path, root)
    except UnsafePathError:
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafePathError(
                f"{where}: cannot read: a symbolic link (never followed)"
            ) from None
        raise StoreError(f"{where}: cannot read: {exc.strerror}") from exc
    try:
        info = os.fstat(fd)
        if not stat_mod.S_ISREG(info.st_mode):
            raise UnsafePathError(
                f"{where}: cannot read: not a regular file ({file_kind(info.st_mode)})"
            )
        if info.st_size > cap:
            raise UnsafePathError(
                f"{where}: cannot read: {info.st_size} bytes, over the {cap}-byte cap"
            )
    except BaseException:
        os.close(fd)
        raise
    return fd, info


def read_with_stat(
    path: PathLike,
    *,
    root: PathLike | None = None,
    cap: int = DEFAULT_CAP,
    name: str | None = None,
) -> tuple[bytes, os.stat_result]:
    """(bytes, stat) of a regular file; see the module's rules. Errors name the file as
    `name` (default: its path)."""
    fd, info = _open_checked(path, root, cap, name)
    where = path if name is None else name
    try:
        chunks = []
        size = 0
        while True:  # bounded: stops at the end or one byte past the cap
            chunk = os.read(fd, min(_CHUNK, cap + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > cap:
                raise UnsafePathError(f"{where}: cannot read: over the {cap}-byte cap")
        return b"".join(chunks), info
    except OSError as exc:
        raise StoreError(f"{where}: cannot read: {exc.strerror}") from None
    finally:
        os.close(fd)


def read_bytes(
    path: PathLike,
    *,
    root: PathLike | None = None,
    cap: int = DEFAULT_CAP,
    name: str | None = None,
) -> bytes:
    """A regular file's bytes, read by the module's rules (a link, FIFO, device or a file
    over `cap` is one UnsafePathError; an absent file one StoreError)."""
    return read_with_stat(path, root=root, cap=cap, name=name)[0]


def read_text(
    path: PathLike,
    *,
    root: PathLike | None = None,
    cap: int = DEFAULT_CAP,
    errors: str = "strict",
) -> str:
    """A regular file's UTF-8 text (`errors="replace"` for sysfs and tool output)."""
    data = read_bytes(path, root=root, cap=cap)
    try:
        return data.decode("utf-8", errors=errors)
    except UnicodeDecodeError as exc:
        raise StoreError(f"{path}: not UTF-8 ({exc.reason} at byte {exc.start})") from None


def read_optional(
    path: PathLike, *, root: PathLike | None = None, cap: int = DEFAULT_CAP
) -> bytes | None:
    """`read_bytes`, or None where nothing is there (a dangling link is not nothing: it
    is refused as a link)."""
    if not os.path.lexists(path):
        return None
    try:
        return read_bytes(path, root=root, cap=cap)
    except StoreError as exc:
        if isinstance(exc.__cause__, FileNotFoundError):
            return None  # removed between the look and the open
        raise


def read_optional_text(
    path: PathLike,
    *,
    root: PathLike | None = None,
    cap: int = DEFAULT_CAP,
    errors: str = "strict",
) -> str | None:
    """`read_text`, or None where nothing is there."""
    data = read_optional(path, root=root, cap=cap)
    if data is None:
        return None
    try:
        return data.decode("utf-8", errors=errors)
    except UnicodeDecodeError as exc:
        raise StoreError(f"{path}: not UTF-8 ({exc.reason} at byte {exc.start})") from None


def read_config_text(path: PathLike) -> str | None:
    """A small file the user writes (a config, the machine id): `read_optional_text` within
    SMALL_CAP, where a file that is there and cannot be read is a ConfigError naming it."""
    try:
        return read_optional_text(path, cap=SMALL_CAP)
    except StoreError as exc:
        raise ConfigError(str(exc)) from None


def open_stream(
    path: PathLike, *, root: PathLike | None = None, cap: int = DEFAULT_CAP
) -> BinaryIO:
    """A binary file object for reading a big file line by line, opened and checked by the
    module's rules (its size when opened is under `cap`). The caller closes it."""
    fd, _ = _open_checked(path, root, cap)
    return os.fdopen(fd, "rb")


def check_regular(
    path: PathLike, *, root: PathLike | None = None, name: str | None = None
) -> os.stat_result:
    """Refuse, without reading it, a file that the reader would refuse (size aside)."""
    fd, info = _open_checked(path, root, 1 << 62, name)
    os.close(fd)
    return info


# --- writing ----------------------------------------------------------------------------


def _walk_dirs(target: PathLike, root: PathLike, parts: list[str]) -> list[Path]:
    """Make sure each of `parts` below `root` is a real dir (made where missing, never
    through a link); returns the dirs made, deepest last."""
    made: list[Path] = []
    walked = Path(root)
    try:
        fd = os.open(
            root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
        )
    except OSError as exc:
        raise StoreError(f"{root}: cannot open: {exc.strerror}") from None
    try:
        for part in parts:
            walked = walked / part
            try:
                os.mkdir(part, 0o777, dir_fd=fd)
                made.append(walked)
            except FileExistsError:
                pass
            try:
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if os.path.islink(walked):
                    raise UnsafePathError(
                        f"{target}: {walked} is a symbolic link; refused (nothing is written "
                        "through a link inside the repository)"
                    ) from None
                if exc.errno == errno.ENOTDIR:
                    raise UnsafePathError(f"{target}: {walked} is not a directory") from None
                raise
            os.close(fd)
            fd = nxt
    except OSError as exc:
        raise StoreError(f"{walked}: cannot create: {exc.strerror}") from None
    finally:
        os.close(fd)
    return made


def ensure_dir(directory: PathLike, root: PathLike) -> list[Path]:
    """Make `directory` (and each missing dir above it, up to `root`) without following a
    link; a link or a non-dir on the way is one UnsafePathError. Returns the dirs made."""
    if os.path.abspath(directory) == os.path.abspath(root):
        return []
    return _walk_dirs(directory, root, _parts_below(directory, root))


def prepare_write(path: PathLike, root: PathLike) -> list[Path]:
    """Check that `path` may be written: inside `root`, every dir between them real (made
    where missing) and the file itself no link and, where it exists, a regular file.
    Returns the dirs made (for a rollback)."""
    parts = _parts_below(path, root)
    made = _walk_dirs(path, root, parts[:-1])
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return made
    if stat_mod.S_ISLNK(info.st_mode):
        raise UnsafePathError(f"{path}: a symbolic link; refused (never written through)")
    if not stat_mod.S_ISREG(info.st_mode):
        raise UnsafePathError(f"{path}: not a regular file ({file_kind(info.st_mode)}); refused")
    return made


def refuse_links(path: PathLike, root: PathLike) -> None:
    """One UnsafePathError where a component between `root` and `path` (the path itself
    included) exists and is a symbolic link; nothing is made. For a verb that reads, then
    writes, under a dir a collaborator may have committed as a link."""
    walked = Path(root)
    for part in _parts_below(path, root):  # bounded: one step per component
        walked = walked / part
        try:
            mode = os.lstat(walked).st_mode
        except FileNotFoundError:
            return
        except OSError as exc:
            raise StoreError(f"{walked}: cannot read: {exc.strerror}") from None
        if stat_mod.S_ISLNK(mode):
            raise UnsafePathError(
                f"{path}: {walked} is a symbolic link; refused (nothing is read or written "
                "through a link inside the repository)"
            )


def repository_root(path: PathLike) -> Path:
    """The root a write to `path` is checked from: the nearest dir above it (by name, no
    link followed) that holds `.git`, else the nearest dir above it that exists."""
    full = Path(os.path.abspath(path))
    existing = None
    for parent in full.parents:  # bounded: one step per component
        if existing is None and os.path.isdir(parent):
            existing = parent
        if os.path.lexists(parent / ".git"):
            return parent
    return existing or full.parent


def check_output(path: PathLike) -> Path:
    """Refuse an output path with a link between its repository root and itself (the path
    included); returns that root, for `prepare_write` / `ensure_dir`."""
    root = repository_root(path)
    refuse_links(path, root)
    return root
