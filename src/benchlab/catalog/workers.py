"""The build's worker processes: each reads run dirs as canonical shard lines (and writes
their views), scrubbing through its own scan memo."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchlab.catalog.extract import (
    check_public_entry,
    extract_entry,
    read_run_dir,
)
from benchlab.catalog.gate import parse_line
from benchlab.catalog.lines import (
    point_of,
)
from benchlab.catalog.shards import (
    encode_line,
    shard_name,
)
from benchlab.catalog.views import ViewWriter, view_names
from benchlab.errors import BenchlabError, SchemaError
from benchlab.layout import (
    RECORD,
    REQUIRED_RUN_FILES,
    Store,
)
from benchlab.redact import ScanMemo
from benchlab.redact.policy import collect_store_names, policy_of
from benchlab.runtime import pool

# The worker side: a process reads run dirs with the build's policy, scan memo and options.
_WORKER: dict[str, Any] = {}


def worker_setup(root: str, retracted: frozenset[str]) -> None:
    """What a reader needs, made on its first read task (a stat task needs none of it)."""
    _WORKER.clear()
    _WORKER.update(root=root, retracted=retracted)


def _worker_state() -> dict[str, Any]:
    if "policy" not in _WORKER:
        _setup_reader(_WORKER["root"], _WORKER["retracted"])
    return _WORKER


def _setup_reader(root: str, retracted: frozenset[str]) -> None:
    policy = policy_of(Path(root))  # the built store's, not the working directory's
    _WORKER.update(
        root=Path(root),
        policy=policy,
        memo=ScanMemo(policy),
        hosts=collect_store_names(Path(root)).hosts,
        passed=set(),
        retracted=retracted,
        views=ViewWriter(Path(root) / "runs", compare=True, store_root=root),
    )


@dataclass
class Fresh:
    """One run dir read: its entry as a shard line."""

    index: int  # into the group's names
    run_id: str
    shard: str
    line: bytes
    point: tuple[Any, Any, Any]
    views: tuple[str, str] | None  # the view names a worker wrote


Task = tuple[str, str, list[tuple[int, str]], bool]
"""(group key, group path, [(index, dir name)], write their views?) of run dirs to read."""


def read_dirs(task: Task) -> tuple[str, list[Fresh], list[str], int, int]:
    """Read run dirs of one group: (key, entries as lines, warnings, skipped, views written)."""
    key, path, items, write_views = task
    state = _worker_state()
    root, policy, memo = state["root"], state["policy"], state["memo"]
    views: ViewWriter | None = state["views"] if write_views else None
    out: list[Fresh] = []
    warnings: list[str] = []
    skipped = 0
    written = views.written if views is not None else 0
    for index, name in items:
        run_dir = f"{path}/{name}"
        try:
            files = read_run_dir(run_dir)
        except BenchlabError as exc:  # a symlinked or unreadable run dir: set aside, named
            skipped += 1
            warnings.append(f"skipped: {exc}")
            continue
        if not files:
            continue
        if RECORD not in files and any(n not in files for n in REQUIRED_RUN_FILES):
            warnings.append(f"{run_dir}: incomplete run dir skipped")
            continue
        try:
            entry = extract_entry(root, Path(run_dir), None, policy, memo, files)
            warnings.extend(check_public_entry(entry, state["hosts"], policy, state["passed"]))
            target = shard_name(entry)
            names = view_names(entry) if views is not None else None
            line = _line_of(entry, run_dir)
        except BenchlabError as exc:
            skipped += 1
            warnings.append(f"skipped: {exc}")
            continue
        run_id = entry["run_id"]
        if views is not None and run_id not in state["retracted"]:
            views.put(entry, names)
        out.append(Fresh(index, run_id, target, line, point_of(entry), names))
    done = views.written - written if views is not None else 0
    return key, out, warnings, skipped, done


def _line_of(entry: dict[str, Any], run_dir: str) -> bytes:
    """The entry as its shard line, held to the gate every reader applies (the writer
    contract, `catalog.contract`): a value no shard can hold or no reader would accept (an
    integer past 64 bits, a number out of range, a reserved metric name written by an older
    version) sets this run aside, named, instead of being published and then set aside by
    every reader, failing `validate` and `build --full` until the line is deleted by hand."""
    try:
        line = encode_line(entry)
    except (TypeError, ValueError) as exc:
        raise SchemaError(f"{run_dir}: cannot be written to a shard: {exc}; set aside") from None
    problem = parse_line(line)[1]
    if problem is not None:
        raise SchemaError(f"{run_dir}: {problem}: no reader would accept its line; set aside")
    return line


class Workers:
    """The build's worker processes, started on first need and shared by its passes
    (checking shards, the stat pass, reading run dirs); forked where the platform can (they
    start in milliseconds and inherit the loaded modules). Each sets itself up to read run
    dirs (the policy, a scan memo) as it starts, while this process goes on."""

    def __init__(self, jobs: int, store: Store, retracted: frozenset[str]) -> None:
        self.jobs = jobs
        self.store = store
        self.retracted = retracted
        self._pool: Any = None

    @property
    def parallel(self) -> bool:
        return self.jobs > 1

    def imap(self, function: Callable[[Any], Any], tasks: list[Any]) -> Iterator[Any]:
        if self._pool is None:
            self._pool = pool.context().Pool(
                self.jobs, worker_setup, (str(self.store.root), self.retracted)
            )
        batches: Iterator[Any] = self._pool.imap(function, tasks)
        return batches

    def close(self) -> None:
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()
            self._pool = None


JOBS_ENV = "BENCHLAB_BUILD_JOBS"
"""Worker processes a build may use to read run dirs (default: `default_jobs`)."""


def default_jobs(full: bool) -> int:
    """Worker processes of a build: $BENCHLAB_BUILD_JOBS, else one per core, and for a full
    build two per core (at most eight more than the cores). Where the run files are not in
    the page cache (a full build of a large store) a reader waits on the disk about a third
    of the time, and a second reader per core fills those waits: a cold full build of
    100,000 runs took 96 s with four workers on two cores, 114 s with two
    (tools/perf/build_profile.py --cold). An incremental build stats warm dirs and reads a
    few: more workers than cores would only each load the redaction policy again."""
    try:
        return max(1, int(os.environ.get(JOBS_ENV, "")))
    except ValueError:
        cores = pool.cpus()
        return min(2 * cores, cores + 8) if full else cores
