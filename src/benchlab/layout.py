"""Every path and file name of the store, and the one way files are written: atomically.

ARCHITECTURE.md, invariant 8 (crash-safe): a file is written to a temp file in the same directory,
fsynced, then renamed over the target, so a sweep killed at any instant leaves either the old file
or the new one, never half of either.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from json.encoder import encode_basestring
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # pydantic is imported where used: `bench best` start-up (query.py) avoids it
    from pydantic import BaseModel, ValidationError

from benchlab.errors import SchemaError, StoreError
from benchlab.files import (
    ensure_dir,
    prepare_write,
    read_bytes,
    read_optional,
    read_optional_text,
    refuse_links,
)
from benchlab.ids import check_id

log = logging.getLogger("benchlab.store")

STORE_ENV = "BENCHLAB_STORE"
STORE_RELATIVE = Path("experiments") / "benchmark"

M = TypeVar("M", bound="BaseModel")


def user_cache_dir() -> Path:
    """$XDG_CACHE_HOME/benchlab, else ~/.cache/benchlab: what depends only on this machine
    and what is installed on it (agent bundles, llama.cpp builds, detect-secrets' patterns),
    never on a store."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "benchlab"


def canonical_json(obj: Any) -> str:
    """The one serialisation of every file benchlab writes: sorted, indented, newline-ended.

    Byte for byte `json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False)` plus a
    newline (a property test holds it to that), but fast: the standard library has a C
    encoder only for compact output, and with an indent takes about 10 s for a 100,000-run
    catalog; `dumps` does the strings and numbers in C and the nesting here."""
    return dumps(obj) + "\n"


def _reference(obj: Any) -> str:
    """The standard library's canonical text: for what `dumps` does not do itself (objects
    with keys that are not strings)."""
    return json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False)


def _float(value: float) -> str:
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    return float.__repr__(value)


def dumps(value: Any, indent: str = "") -> str:
    """`canonical_json(value)` without the trailing newline, at nesting `indent`."""
    if isinstance(value, str):
        return encode_basestring(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return _float(value)
    inner = indent + "  "
    if isinstance(value, dict):
        if not value:
            return "{}"
        if not all(isinstance(k, str) for k in value):
            return _reference(value).replace("\n", "\n" + indent)
        parts = [
            f"{inner}{encode_basestring(k)}: {dumps(v, inner)}" for k, v in sorted(value.items())
        ]
        return "{\n" + ",\n".join(parts) + "\n" + indent + "}"
    if isinstance(value, (list, tuple)):
        if not value:
            return "[]"
        if all(type(item) is str for item in value):
            body = (",\n" + inner).join(map(encode_basestring, value))
            return "[\n" + inner + body + "\n" + indent + "]"
        return (
            "[\n" + ",\n".join(inner + dumps(item, inner) for item in value) + "\n" + indent + "]"
        )
    raise TypeError(f"cannot serialise {type(value).__name__}")


def atomic_write_bytes(
    path: Path, data: bytes, *, durable: bool = True, root: Path | None = None
) -> None:
    """Replace `path` whole. `durable=False` skips the fsyncs: for state that observers read
    and a crash may lose (a reader still never sees half a file). A failure (a full disk, a
    read-only store) raises OSError naming `path` itself, never the temp file, and leaves
    `path` as it was; inside a `WriteSet` the old file is kept until the set commits.

    With a `root` (else `write_root(path)`: the active `WriteSet`'s or the guarded store's),
    no component between the root and the file may be a link: one UnsafePathError, nothing
    written (ARCHITECTURE.md, One reader and one writer path)."""
    made = place(path, root)
    if _ACTIVE is not None and _ACTIVE.owns():
        _ACTIVE.made_dirs.extend(reversed(made))
    try:
        _atomic_write(path, data, durable)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(path)) from None


_GUARDED: Path | None = None


@contextlib.contextmanager
def guard_store(root: Path) -> Iterator[None]:
    """While inside, every write this process makes under `root` (the store the CLI works
    on) is placed by `prepare_write` from it, whether or not its caller names a root: a
    committed link at `runs/` or `machines/x/history` never sends a write outside the
    repository (ARCHITECTURE.md, One reader and one writer path)."""
    global _GUARDED
    outer, _GUARDED = _GUARDED, Path(os.path.abspath(root))
    try:
        yield
    finally:
        _GUARDED = outer


def write_root(path: Path | str) -> Path | None:
    """The root a write to `path` is checked from where its caller names none: the active
    `WriteSet`'s, else the guarded store's (`guard_store`), for a path under it; None for a
    path outside both (a file the user names, a temp dir, the user's cache)."""
    active = _ACTIVE.root if _ACTIVE is not None and _ACTIVE.owns() else None
    for root in (active, _GUARDED):  # bounded: two candidates
        if root is not None and _under(Path(path), root) and os.path.isdir(root):
            return root
    return None


def place(path: Path | str, root: Path | None = None) -> list[Path]:
    """Check a write to `path` (from `root`, else `write_root(path)`): `prepare_write`'s
    rules, one UnsafePathError otherwise. Returns the dirs made. For the writers that open
    their file themselves (appends, locks, caches written in place)."""
    where = root if root is not None else write_root(path)
    if where is None:
        return []
    if root is not None and not os.path.lexists(root):
        os.makedirs(root, exist_ok=True)  # a new store (an import into it): nothing to link
    return prepare_write(path, where)


def make_dirs(directory: Path | str, root: Path | None = None) -> None:
    """`mkdir -p directory`, never through a link where it lies under a store (`place`)."""
    where = root if root is not None else write_root(directory)
    if where is None:
        os.makedirs(directory, exist_ok=True)
    else:
        ensure_dir(directory, where)


def cache_readable(path: Path | str, root: Path | None = None) -> bool:
    """Whether a private cache file may be read: False where a component between the store
    root (`root`, else `write_root(path)`) and it is a link, since a cache holds marshal or
    array data nobody checks (ARCHITECTURE.md, One reader and one writer path). Passing
    one over only costs the speed it would have bought."""
    where = root if root is not None else write_root(path)
    if where is None:
        return True
    try:
        refuse_links(path, where)
    except StoreError as exc:
        log.debug("cache passed over: %s", exc)
        return False
    return True


def write_cache(path: Path, data: bytes, *, root: Path | None = None) -> bool:
    """Write a private cache file (no fsync: a crash loses a cache, never tears one) by the
    guarded writer; a refused or failed write is logged at debug and costs only speed."""
    try:
        atomic_write_bytes(path, data, durable=False, root=root)
    except (StoreError, OSError) as exc:
        log.debug("cache not written: %s", exc)
        return False
    return True


def _under(path: Path, root: Path) -> bool:
    rel = os.path.relpath(os.path.abspath(path), os.path.abspath(root))
    return rel != os.pardir and not rel.startswith(os.pardir + os.sep)


def _atomic_write(path: Path, data: bytes, durable: bool) -> None:
    if not path.parent.is_dir():
        made = _missing_parents(path.parent)
        path.parent.mkdir(parents=True, exist_ok=True)
        if _ACTIVE is not None and _ACTIVE.owns():
            _ACTIVE.made_dirs.extend(made)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o644)  # mkstemp's 0600 would make published files unreadable to others
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        active = _ACTIVE if _ACTIVE is not None and _ACTIVE.owns() else None
        if active is not None:
            active.keep(path)
        os.replace(tmp, path)
        if active is not None:
            active.replaced()
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if not durable:
        return
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _missing_parents(path: Path) -> list[Path]:
    """The dirs `mkdir(parents=True)` of `path` would make, deepest first."""
    made = []
    while not path.exists() and path != path.parent:
        made.append(path)
        path = path.parent
    return made


def remove_file(path: Path) -> None:
    """Remove `path`; inside a `WriteSet` it is moved aside and comes back on a rollback."""
    if _ACTIVE is not None and _ACTIVE.owns():
        _ACTIVE.keep(path, move=True)
    else:
        path.unlink()


class WriteSet:
    """Files replaced together, all or none: while a set is active, each file that
    `atomic_write_bytes` replaces or `remove_file` removes keeps its old version in the
    set's private `aside` dir (a hard link: no data is copied, and on a full disk it needs
    no space; the bytes, where links cannot be made), and each new file is noted. `commit`
    drops the old versions; `rollback` puts them back and removes the new files and the
    dirs made for them, so a build that fails part way (ENOSPC, EROFS, a bad file found
    late) leaves the tracked catalog as it was.

    Each file stays whole at every instant (every write is a rename); a process killed
    between the first replacement and the commit leaves the set's `JOURNAL`, and the next
    set (or `bench catalog validate`) rolls it back (`recover_write_set`; the catalog lock
    keeps sets apart); in a private dir, the old versions never reach git. Only the process
    that opened the set records (forked workers inherit the module, not the set)."""

    def __init__(self, aside: Path, root: Path | None = None) -> None:
        self.pid = os.getpid()
        self.aside = aside
        self.root = root
        self.kept: list[tuple[Path, Path | None]] = []
        self.seen: set[Path] = set()
        self.made_dirs: list[Path] = []
        self.count = 0

    def owns(self) -> bool:
        return os.getpid() == self.pid

    def keep(self, path: Path, *, move: bool = False) -> None:
        """Keep `path`'s current version (none: it is new) before it is replaced."""
        if path in self.seen:
            if move:
                path.unlink()
            return
        old = self.aside / f"{len(self.kept)}.{path.name}"
        make_dirs(self.aside, self.root)
        if not path.exists():
            self._journal(path, None)
            self.seen.add(path)
            self.kept.append((path, None))  # a new file
            return
        try:
            with contextlib.suppress(FileNotFoundError):
                old.unlink()
            os.link(path, old)
        except OSError:  # no hard links here: a copy of the bytes
            with open(old, "wb") as handle:
                handle.write(read_bytes(path))
                handle.flush()
                os.fsync(handle.fileno())
        self._journal(path, old)  # before the file is touched: a kill -9 is rolled back
        if move:
            path.unlink()
        self.seen.add(path)
        self.kept.append((path, old))

    def _journal(self, path: Path, saved: Path | None) -> None:
        """One line of the set's journal (`JOURNAL`), on disk before `path` changes."""
        line = json.dumps({"path": str(path), "saved": saved.name if saved else None})
        with open(self.aside / JOURNAL, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def replaced(self) -> None:
        """A file of the set was replaced (tests may hold the set here: `PAUSE_ENV`)."""
        self.count += 1
        pause = os.environ.get(PAUSE_ENV)
        if pause and pause.isdigit() and self.count == int(pause):
            (self.aside / "paused").write_text(str(os.getpid()))
            import time

            time.sleep(600)

    def commit(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            (self.aside / JOURNAL).unlink()  # the set is done: nothing to roll back
        for _, saved in self.kept:
            if saved is not None:
                with contextlib.suppress(OSError):
                    saved.unlink()
        self.kept.clear()

    def rollback(self) -> list[str]:
        """Put every old version back; returns what could not be (for a warning)."""
        failed: list[str] = []
        for path, saved in reversed(self.kept):
            try:
                if saved is None:
                    path.unlink(missing_ok=True)
                else:
                    os.replace(saved, path)
            except OSError as exc:
                failed.append(f"{path}: {exc.strerror}")
        for made in self.made_dirs:
            with contextlib.suppress(OSError):
                made.rmdir()
        self.kept.clear()
        if not failed:
            with contextlib.suppress(FileNotFoundError):
                (self.aside / JOURNAL).unlink()
        return failed


JOURNAL = "journal"
"""A write set's journal in its `aside` dir: one JSON line per file, `{"path", "saved"}`
(the old version's name there, or null for a new file), written and synced before the file
changes and removed when the set commits. Found by the next set (or `recover_write_set`),
it means a process was killed mid set: every file goes back (ARCHITECTURE.md, invariant 8)."""
PAUSE_ENV = "BENCHLAB_TEST_PAUSE_WRITE_SET"
"""Tests only: hold a write set after this many files, so a test can kill it there."""


def recover_write_set(aside: Path) -> list[str]:
    """Roll back a write set a killed process left (its `JOURNAL`): every file it replaced
    gets its old version back, every file it made goes. Returns the paths put back (empty
    when there was nothing to do). The caller holds the lock the set was written under."""
    journal = aside / JOURNAL
    text = read_optional_text(journal)
    if text is None:
        return []
    done: list[str] = []
    for line in reversed(text.splitlines()):
        try:
            item = json.loads(line)
            path, saved = Path(item["path"]), item["saved"]
        except (ValueError, KeyError, TypeError):
            continue  # a line torn by the kill: its file was not touched yet
        if saved is None:
            path.unlink(missing_ok=True)
        elif (aside / saved).exists():
            os.replace(aside / saved, path)
        done.append(str(path))
    journal.unlink()
    return done


_ACTIVE: WriteSet | None = None


@contextlib.contextmanager
def write_set(aside: Path, root: Path | None = None) -> Iterator[WriteSet]:
    """Every file written or removed inside is replaced all or none (`WriteSet`): on any
    exception the old versions come back, then the exception goes on. `aside`: a private
    dir on the same file system for the old versions (what a killed set left there goes).
    `root`: every file written under it is placed by `prepare_write` (no link between the
    root and the file)."""
    global _ACTIVE
    if _ACTIVE is not None and _ACTIVE.owns():
        yield _ACTIVE  # nested: the outer set decides
        return
    guard = root if root is not None else write_root(aside)
    if guard is not None:
        refuse_links(aside, guard)  # its journal is read and its old files removed below
    for line in recover_write_set(aside):
        log.warning("put back after an interrupted write: %s", line)
    if aside.is_dir():
        for stale in aside.iterdir():
            with contextlib.suppress(OSError):
                stale.unlink()
    outer, _ACTIVE = _ACTIVE, WriteSet(aside, root)
    current = _ACTIVE
    try:
        yield current
    except BaseException:
        _ACTIVE = outer
        for line in current.rollback():
            log.warning("not restored: %s", line)
        raise
    _ACTIVE = outer
    current.commit()


def write_error(exc: OSError) -> StoreError:
    """An OSError of a store read or write (a full disk, a read-only store) as the one
    line the CLI prints: the file, and why."""
    where = exc.filename if exc.filename is not None else "the store"
    return StoreError(f"{where}: {exc.strerror or exc}")


def atomic_write_text(path: Path, text: str, *, root: Path | None = None) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), root=root)


def atomic_write_json(path: Path, obj: Any, *, root: Path | None = None) -> None:
    atomic_write_text(path, canonical_json(obj), root=root)


def append_json_lines(path: Path, items: Iterable[Any]) -> None:
    """Append one JSON line per item, flushed and fsynced before returning.

    For the append-only logs (retries, machine history, injected points): a reader running
    beside the writer, or a crash, sees whole lines and at most one partial last line, which
    every reader of these logs skips.
    """
    text = "".join(
        json.dumps(item, sort_keys=True, ensure_ascii=False, default=str) + "\n" for item in items
    )
    place(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())


def dump_model(model: BaseModel) -> dict[str, Any]:
    """A model as the plain JSON object written to disk (aliases, no unset optionals)."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def write_model(path: Path, model: BaseModel, *, root: Path | None = None) -> None:
    """`model` as its JSON file; with `root`, no link between it and the file (ARCHITECTURE.md,
    One reader and one writer path)."""
    atomic_write_json(path, dump_model(model), root=root)


MAX_JSON_BYTES = 256 * 1024 * 1024
"""No file of the store is near this; a bigger one is hostile or broken, not data."""


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:40]} overflows to infinity")
    return value


def loads_json(data: bytes | str, where: Path | str) -> Any:
    """Parse JSON that may be hostile; every refusal is one SchemaError naming `where`.

    Refused: more than MAX_JSON_BYTES; nesting deeper than the interpreter's recursion limit
    (the C scanner of `json` counts its recursion and raises RecursionError where orjson
    before 3.9.15 overflowed the stack and segfaulted, so the stdlib parser is the guard);
    NaN, Infinity and numbers that overflow to infinity (a measurement that is not a number
    must not reach the catalog as one); and anything json itself rejects.
    """
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if len(raw) > MAX_JSON_BYTES:
        raise SchemaError(f"{where}: $: larger than {MAX_JSON_BYTES} bytes; refused")
    try:
        return json.loads(raw, parse_constant=_refuse_constant, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        raise SchemaError(f"{where}: line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except UnicodeDecodeError as exc:
        raise SchemaError(f"{where}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    except RecursionError:
        raise SchemaError(
            f"{where}: $: arrays or objects nested too deep to parse; refused"
        ) from None
    except ValueError as exc:
        raise SchemaError(f"{where}: $: {exc}") from None


def read_json(path: Path) -> Any:
    """Parse a JSON file; a missing, malformed or hostile file is a one-line error naming it."""
    try:
        size = os.lstat(path).st_size
    except OSError:
        size = 0
    if size > MAX_JSON_BYTES:
        raise SchemaError(f"{path}: $: larger than {MAX_JSON_BYTES} bytes; refused")
    data = read_optional(path, cap=MAX_JSON_BYTES)
    if data is None:
        raise StoreError(f"{path}: file not found")
    return loads_json(data, path)


def validation_message(path: Path | str, exc: ValidationError) -> str:
    """The first pydantic error as `file: $.json.path: message`."""
    first = exc.errors()[0]
    pointer = "$" + "".join(
        f"[{part}]" if isinstance(part, int) else f".{part}" for part in first["loc"]
    )
    return f"{path}: {pointer}: {first['msg']}"


def parse_model(path: Path | str, cls: type[M], data: Any) -> M:
    from pydantic import ValidationError

    try:
        return cls.model_validate(data)
    except ValidationError as exc:
        raise SchemaError(validation_message(path, exc)) from None


def read_model(path: Path, cls: type[M]) -> M:
    """Read and validate one file; errors name the file and the JSON path of the field."""
    return parse_model(path, cls, read_json(path))


def find_store(start: Path | None = None) -> Path:
    """The store root: $BENCHLAB_STORE, else `experiments/benchmark` in this or a parent dir."""
    override = os.environ.get(STORE_ENV)
    if override:
        return Path(override)
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / STORE_RELATIVE).is_dir():
            return candidate / STORE_RELATIVE
    return here / STORE_RELATIVE


@dataclass(frozen=True)
class Store:
    """The paths of one store. Owning them here keeps every other module free of path maths."""

    root: Path

    @property
    def catalog_path(self) -> Path:
        return self.root / "catalog.json"

    @property
    def machines_dir(self) -> Path:
        return self.root / "machines"

    @property
    def inventory_path(self) -> Path:
        return self.machines_dir / "catalog.json"

    @property
    def redaction_path(self) -> Path:
        return self.root / "redaction.yaml"

    @property
    def runs_dir(self) -> Path:
        return self.root / "runs"

    @property
    def by_machine(self) -> Path:
        return self.runs_dir / "by-machine"

    @property
    def by_model(self) -> Path:
        return self.runs_dir / "by-model"

    @property
    def by_date(self) -> Path:
        return self.runs_dir / "by-date"

    @property
    def public_runs(self) -> Path:
        return self.runs_dir / "public"

    @property
    def sweeps_dir(self) -> Path:
        return self.runs_dir / "sweeps"

    @property
    def charts_dir(self) -> Path:
        return self.root / "charts"

    @property
    def write_aside(self) -> Path:
        """Private: the old versions of the catalog files a build is replacing, until it
        commits (`write_set`); under runs/, so never tracked."""
        return self.runs_dir / ".catalog-aside"

    @property
    def query_cache(self) -> Path:
        """Private, derived: catalog.json as `bench list/best/...` read it fast (query.py)."""
        return self.runs_dir / ".cache" / "catalog-query.marshal"

    def require(self) -> Store:
        if not self.root.is_dir():
            raise StoreError(
                f"{self.root}: no store here; run from a benchlab checkout or set {STORE_ENV}"
            )
        return self

    def machine_dir(self, machine_id: str) -> Path:
        return self.by_machine / check_id(machine_id, "machine id")

    def run_dir(self, machine_id: str, run_id: str) -> Path:
        return self.machine_dir(machine_id) / check_id(run_id, "run id")

    def public_run_dir(self, machine_id: str, run_id: str) -> Path:
        return self.public_runs / check_id(machine_id, "machine id") / check_id(run_id, "run id")

    def private_specs(self, machine_id: str) -> Path:
        return self.machine_dir(machine_id) / "specs.json"

    def public_specs(self, machine_id: str) -> Path:
        return self.machines_dir / check_id(machine_id, "machine id") / "specs.json"

    def sweep_dir(self, experiment: str) -> Path:
        return self.sweeps_dir / check_id(experiment, "experiment")

    def relative(self, path: Path) -> str:
        """A store path as the catalog records it: relative, POSIX, never absolute."""
        return path.relative_to(self.root).as_posix() + ("/" if path.is_dir() else "")


# File names inside a run dir (ARCHITECTURE.md, The run files).
MANIFEST = "manifest.json"
KERNEL = "kernel.json"
BATCH = "batch.json"
RECORD = "record.json"
RAW_DIR = "raw"
REQUIRED_RUN_FILES = (MANIFEST, KERNEL, BATCH)

# File names inside a sweep dir.
SWEEP_STATE = "state.json"
SCHEDULE = "schedule.json"
RETRIES = "retries.jsonl"
LOCK = "lock"
STOP_REQUEST = "stop"
IN_FLIGHT = "in_flight.json"
