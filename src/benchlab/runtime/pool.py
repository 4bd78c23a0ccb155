"""Worker processes that work on Linux, macOS and Windows alike.

`fork` shares a large input with the workers for free (they inherit the parent's memory),
but it is not everywhere: macOS defaults to `spawn` (fork is unsafe there with system
frameworks loaded) and Windows has only `spawn`. A spawned worker starts a fresh interpreter
and gets its input pickled, once per worker, through the pool's initializer. Work whose
input cannot be pickled (it holds templates, open files, closures) says so with
`picklable=False` and then runs in this process where fork is missing: slower, never wrong.

`BENCHLAB_START_METHOD=spawn` (or `fork`, `forkserver`) picks the start method, so the
spawn path is tested on Linux too.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from multiprocessing.context import BaseContext
from typing import Any, TypeVar

from benchlab.errors import ConfigError

START_METHOD_ENV = "BENCHLAB_START_METHOD"

T = TypeVar("T")
R = TypeVar("R")


def cpus() -> int:
    """The CPUs this process may run on: the affinity mask where the OS has one (a container
    or `taskset` limits it below the machine's count), else the machine's count."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS and Windows have no affinity call
        return os.cpu_count() or 1


def start_method() -> str:
    """fork where the platform offers it, else spawn; `BENCHLAB_START_METHOD` overrides."""
    available = multiprocessing.get_all_start_methods()
    wanted = os.environ.get(START_METHOD_ENV)
    if wanted:
        if wanted not in available:
            raise ConfigError(
                f"{START_METHOD_ENV}={wanted!r}: not a start method here "
                f"(available: {', '.join(available)})"
            )
        return wanted
    return "fork" if "fork" in available else "spawn"


def context() -> BaseContext:
    """The multiprocessing context of `start_method()`."""
    return multiprocessing.get_context(start_method())


def inherits() -> bool:
    """Whether workers see the parent's module globals as they were at pool start (fork)."""
    return start_method() == "fork"


def pool_map(
    fn: Callable[[T], R],
    items: Sequence[T],
    workers: int,
    *,
    setup: Callable[[Any], None] | None = None,
    shared: Any = None,
    picklable: bool = True,
    chunksize: int = 1,
) -> list[R]:
    """`[fn(item) for item in items]`, in `workers` processes where that can help.

    `setup(shared)` installs the input `fn` reads (a module global): here first, so that
    forked workers inherit it and the in-process path sees it, and in each spawned worker
    through the pool's initializer (`shared` pickled once per worker). The caller clears
    that global afterwards. `fn` and `setup` must be module-level functions. With one
    worker, fewer than two items, or (`picklable=False`) no fork, the work runs here."""
    if setup is not None:
        setup(shared)
    if workers <= 1 or len(items) < 2 or not (picklable or inherits()):
        return [fn(item) for item in items]
    spawned = not inherits()
    initializer = setup if spawned and setup is not None else None
    initargs = (shared,) if initializer is not None else ()
    with context().Pool(min(workers, len(items)), initializer, initargs) as pool:
        return pool.map(fn, items, chunksize=chunksize)
