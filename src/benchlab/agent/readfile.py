"""The agent's guarded reader of sysfs, /proc and /etc files (ARCHITECTURE.md, One reader,
one writer path).

The same rules as `benchlab.files`, in the standard library only (the agent imports nothing
else of benchlab; ARCHITECTURE.md, invariant 9): the file is opened without following a link
in its last component (sysfs's own links above it, `cpufreq` to `policy0`, are the kernel's),
without blocking (a FIFO planted under a fake root opens at once and is refused), must be a
regular file (sysfs and /proc files are), and is read to at most `cap` bytes. Anything else
is None: "I could not read it", which every caller reports as unknown.
"""

from __future__ import annotations

import os
import stat

CAP = 4 * 1024 * 1024
"""Larger than any /proc/cpuinfo (about 2 KiB a core) or sysfs value."""

_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


def read_bytes(path: str, cap: int = CAP) -> bytes | None:
    """A regular file's bytes, or None (absent, a link, a FIFO, a device, over `cap`)."""
    try:
        fd = os.open(path, _FLAGS)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks = []
        size = 0
        while True:  # bounded: stops at the end or one byte past the cap
            chunk = os.read(fd, min(1 << 16, cap + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > cap:
                return None
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def read_text(path: str, encoding: str = "utf-8", cap: int = CAP) -> str | None:
    """`read_bytes` decoded (bad bytes replaced), or None."""
    data = read_bytes(path, cap)
    return None if data is None else data.decode(encoding, errors="replace")
