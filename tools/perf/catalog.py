"""Catalog performance on a synthetic fleet of 100,000 or 1,000,000 runs, against its targets.

    python tools/perf/catalog.py [--runs 100000] [--dir DIR] [--rounds 3]
                                 [--full-again] [--workers N] [--fleet-only]

`--dir` defaults to /tmp/bl-perf-100k (or /tmp/bl-perf-1m for --runs 1000000): the fleet lives
in DIR/store with a `.fleet-<runs>-seed0` marker, is generated once (minutes at a million runs,
see make_fleet.py) and reused; a dir holding another fleet size is refused, not overwritten.
`--fleet-only` stops once the fleet exists (prepare a big fleet now, measure it later).

Prints, for the sharded v3 catalog (the only format a build writes):
- the largest tracked catalog file and the number of tracked files (catalog.json, the v3
  shards under catalog/, machines/);
- full build from scratch (`bench catalog build`, no catalog, no cache) and its peak RSS;
  measured once per fleet dir and format and reused afterwards unless --full-again;
- incremental build adding 1,000 new runs (median of --rounds) and its peak RSS; the store is
  put back to the baseline after every round;
- `bench best` and `bench table --model smollm2-135m` wall time including interpreter start
  (the first call, then the median of 5) and peak RSS;
- git-friendliness: the public files are committed to a git repo (DIR/git-<format>, with the
  store as its work tree, so nothing is copied); after one +1,000 round, the files and lines
  the commit changes and the size of a thin pack of that commit against its parent (what a
  push transfers); the same for a commit adding one run;
- a summary table against the issue's targets.

Every time is the wall time of a `python -m benchlab ...` child, interpreter start included;
peak RSS is the child's `ru_maxrss` from os.wait4 (its own and its reaped children's).

The baseline is a snapshot of hard links (catalog files, shards, machines/, the build cache):
builds replace files by rename, so the links keep the baseline bytes, and restoring links the
very same inodes back. That matters: the v3 build trusts its cache only where a shard's size,
mtime and inode are unchanged, so a restore by copy would make every later round re-read every
shard and measure a path no real incremental build takes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# A sibling script: `python tools/perf/catalog.py` puts tools/perf first on sys.path.
import make_fleet

RUNS = 100_000
ADDED = 1_000
SEED = 0
MODEL = "smollm2-135m"
QUERY_REPEAT = 5
PUBLIC = ("catalog.json", "catalog", "machines")
"""What the tracked public catalog is, relative to the store root (pathspecs for git)."""
PRIVATE_SNAPSHOT = ("runs/.catalog-cache.json", "runs/.catalog-cache", "runs/.cache")
"""Private caches (files or dirs) a build or query rewrites: the build cache (a JSON file, or
a dir of marshal files that vouches for them by their stat) and the query cache."""
MB = 1_000_000
KIB = 1024

TARGETS = {
    "largest": 20 * MB,
    "full_s": 120.0,
    "added_s": 5.0,
    "query_s": 1.0,
    "rss": 2_000_000_000,
    "pack": 1 * MB,
    "one_run_files": 2,
}


def default_dir(runs: int) -> Path:
    """A dir per fleet size, so the 100k and 1M fleets (and their builds) live side by side."""
    if runs % 1_000_000 == 0:
        label = f"{runs // 1_000_000}m"
    elif runs % 1_000 == 0:
        label = f"{runs // 1_000}k"
    else:
        label = str(runs)
    return Path(f"/tmp/bl-perf-{label}")


# --- children with their peak memory ------------------------------------------------------


@dataclass
class Child:
    """One finished child process: wall time, peak RSS (bytes), exit code and output."""

    seconds: float
    rss: int
    code: int
    out: str
    err: str
    out_bytes: int = 0


def run_child(
    argv: list[str],
    *,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    stdin: bytes | None = None,
    keep_out: bool = True,
) -> Child:
    """Run `argv` and collect it with os.wait4, which returns the child's rusage.

    subprocess.run cannot be used: it reaps the child itself and the rusage is lost. Output
    goes to temporary files (no pipe to drain, so no deadlock however much a child prints).
    `keep_out=False` only counts stdout's bytes (a pack is not text).
    """
    with (
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
        tempfile.TemporaryFile() as given,
    ):
        if stdin is not None:
            given.write(stdin)
            given.seek(0)
        started = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=given, stdout=out, stderr=err)
        _pid, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)  # Popen must not wait again
        size = out.tell()
        out.seek(0)
        err.seek(0)
        text = out.read().decode("utf-8", "replace") if keep_out else ""
        return Child(
            seconds=elapsed,
            rss=usage.ru_maxrss * KIB,  # KiB on Linux
            code=proc.returncode,
            out=text.strip(),
            err=err.read().decode("utf-8", "replace").strip(),
            out_bytes=size,
        )


def bench(store: Path, *args: str, check: bool = True) -> Child:
    """One `python -m benchlab --store STORE ARGS`, interpreter start included."""
    child = run_child([sys.executable, "-m", "benchlab", "--store", str(store), *args])
    if check and child.code != 0:
        raise SystemExit(f"bench {' '.join(args)} failed ({child.code}): {child.err[-2000:]}")
    return child


# --- the perf dir -------------------------------------------------------------------------


@dataclass
class Perf:
    """The perf dir of one fleet size and the format being measured."""

    root: Path
    runs: int
    fmt: str
    store: Path = field(init=False)
    baseline: Path = field(init=False)
    git_dir: Path = field(init=False)
    state_path: Path = field(init=False)

    def __post_init__(self) -> None:
        self.store = self.root / "store"
        self.baseline = self.root / f"baseline-{self.fmt}"
        self.git_dir = self.root / f"git-{self.fmt}"
        self.state_path = self.root / "state.json"

    @property
    def step(self) -> int:
        return make_fleet.default_step(self.runs)

    def state(self) -> dict[str, Any]:
        """What the store holds now: which format's baseline, and runs added past it that a
        crashed round did not remove."""
        if not self.state_path.exists():
            return {}
        return json.loads(self.state_path.read_text())

    def set_state(self, **values: Any) -> None:
        self.state_path.write_text(json.dumps(values, sort_keys=True))


def marker_of(runs: int) -> str:
    return f".fleet-{runs}-seed{SEED}"


def ensure_fleet(perf: Perf, workers: int | None) -> dict[str, Any]:
    """The fleet of `perf.runs` runs in the store: reused when its marker is there,
    generated otherwise. Returns the marker's record (generation time, workers)."""
    store = perf.store
    marker = store / marker_of(perf.runs)
    if marker.exists():
        text = marker.read_text()
        return json.loads(text) if text.strip() else {}
    others = sorted(p.name for p in store.glob(".fleet-*")) if store.is_dir() else []
    if others:
        raise SystemExit(
            f"{store} holds another fleet ({', '.join(others)}); pass another --dir or delete it"
        )
    if store.exists():
        print(f"removing an unfinished fleet in {store} ...", flush=True)
        shutil.rmtree(store)
    for stale in (*perf.root.glob("baseline-*"), *perf.root.glob("git-*")):
        shutil.rmtree(stale)
    perf.state_path.unlink(missing_ok=True)
    count = workers or os.cpu_count() or 1
    print(f"generating {perf.runs} runs in {store} ({count} workers) ...", flush=True)
    started = time.perf_counter()
    make_fleet.make_fleet(store, perf.runs, SEED, workers=workers)
    elapsed = time.perf_counter() - started
    print(f"  generated in {elapsed:.1f} s", flush=True)
    record = {"runs": perf.runs, "seed": SEED, "seconds": round(elapsed, 1), "workers": count}
    marker.write_text(json.dumps(record, sort_keys=True))
    return record


def public_files(store: Path) -> list[str]:
    """The tracked catalog files, relative to the store (posix), sorted."""
    found = []
    for top in PUBLIC:
        path = store / top
        if path.is_file():
            found.append(top)
        elif path.is_dir():
            for dirpath, _dirs, files in os.walk(path):
                for name in files:
                    if not name.startswith("."):
                        found.append(Path(dirpath, name).relative_to(store).as_posix())
    return sorted(found)


def private_files(store: Path) -> list[str]:
    """The files of the private caches, relative to the store (posix), sorted."""
    found = []
    for top in PRIVATE_SNAPSHOT:
        path = store / top
        if path.is_file():
            found.append(top)
        elif path.is_dir():
            for dirpath, _dirs, files in os.walk(path):
                found += [Path(dirpath, n).relative_to(store).as_posix() for n in files]
    return sorted(found)


def largest_tracked(store: Path) -> tuple[str, int]:
    """(name, bytes) of the largest tracked catalog file."""
    sizes = [(name, (store / name).stat().st_size) for name in public_files(store)]
    return max(sizes, key=lambda item: item[1])


def clear_derived(store: Path) -> None:
    """Everything a build or a query writes, so the full build starts from nothing."""
    for name in ("catalog.json", "catalog", "machines", "runs/by-model", "runs/by-date"):
        if (store / name).is_dir():
            shutil.rmtree(store / name)
        else:
            (store / name).unlink(missing_ok=True)
    for name in PRIVATE_SNAPSHOT:
        if (store / name).is_dir():
            shutil.rmtree(store / name)
        else:
            (store / name).unlink(missing_ok=True)


def snapshot_files(store: Path) -> list[str]:
    return public_files(store) + private_files(store)


def _signature(path: Path) -> list[int]:
    stat = path.stat()
    return [stat.st_ino, stat.st_size, stat.st_mtime_ns]


def take_snapshot(perf: Perf) -> None:
    """The baseline: a hard link to every public file and private cache file, with its
    (inode, size, mtime). Caches are linked too: the v3 build cache vouches for its own
    files by their stat, so a copy would be ignored."""
    files = perf.baseline / "files"
    shutil.rmtree(files, ignore_errors=True)
    manifest = {}
    for name in snapshot_files(perf.store):
        target = files / name
        target.parent.mkdir(parents=True, exist_ok=True)
        os.link(perf.store / name, target)
        manifest[name] = _signature(target)
    (perf.baseline / "manifest.json").write_text(json.dumps(manifest, sort_keys=True))


def _check_baseline(perf: Perf, manifest: dict[str, list[int]]) -> None:
    """Links hold the baseline only while every writer replaces files by rename; a file
    written in place would change the baseline with it. Refuse to measure on from that."""
    for name, signature in manifest.items():
        if _signature(perf.baseline / "files" / name) != signature:
            raise SystemExit(
                f"{perf.baseline / 'files' / name}: changed in place since the snapshot; "
                "the baseline is lost: rerun with --full-again"
            )


def _remove(path: Path, stop: Path) -> None:
    """Unlink `path` and the parents it leaves empty, up to (not including) `stop`."""
    path.unlink(missing_ok=True)
    parent = path.parent
    while parent != stop and parent.is_relative_to(stop):
        try:
            parent.rmdir()
        except OSError:
            return
        parent = parent.parent


def _added_entries(perf: Perf, changed: list[str], wanted: set[str]) -> list[dict[str, Any]]:
    """The catalog entries of the added runs, read from the files the build changed only."""
    import orjson

    from benchlab.catalog.shards import SHARD_SUFFIX, read_shard

    found: list[dict[str, Any]] = []
    for name in changed:
        path = perf.store / name
        if name.endswith(SHARD_SUFFIX):
            entries = read_shard(path, name)
        elif name == "catalog.json":
            entries = orjson.loads(path.read_bytes()).get("runs", [])
        else:
            continue
        found.extend(e for e in entries if e.get("run_id") in wanted)
    return found


def restore(perf: Perf, first: int, count: int) -> None:
    """Back to the baseline: drop the runs `first .. first+count-1` (their run dirs and
    views) and link the baseline's files back where a build replaced them."""
    from benchlab.catalog.views import view_names

    store = perf.store
    manifest: dict[str, list[int]] = json.loads((perf.baseline / "manifest.json").read_text())
    _check_baseline(perf, manifest)
    changed = [
        name
        for name in snapshot_files(store)
        if name not in manifest or (store / name).stat().st_ino != manifest[name][0]
    ]
    added = [make_fleet.run_documents(SEED, i, perf.step) for i in range(first, first + count)]
    wanted = {docs["run_id"] for docs in added}
    runs_dir = store / "runs"
    for entry in _added_entries(perf, changed, wanted):
        for name in view_names(entry):
            _remove(runs_dir / name, runs_dir)
    for docs in added:
        shutil.rmtree(runs_dir / "by-machine" / docs["machine"] / docs["run_id"], True)
    for name in changed:
        if name not in manifest:
            _remove(store / name, store)
    for name, signature in manifest.items():
        path = store / name
        if path.exists() and path.stat().st_ino == signature[0]:
            continue
        tmp = path.with_name(f".{path.name}.restore")
        tmp.unlink(missing_ok=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        os.link(perf.baseline / "files" / name, tmp)
        os.replace(tmp, path)
    perf.set_state(format=perf.fmt)


def recover(perf: Perf) -> None:
    """Undo a round that did not finish (the script was stopped mid-round)."""
    state = perf.state()
    pending = state.get("added")
    manifest = perf.baseline / "manifest.json"
    if manifest.exists() and not all(
        isinstance(v, list) for v in json.loads(manifest.read_text()).values()
    ):
        (perf.baseline / "full.json").unlink(missing_ok=True)  # an older layout: build again
        return
    if pending and state.get("format") == perf.fmt and manifest.exists():
        print(f"removing {pending[1]} runs left by an unfinished round ...", flush=True)
        restore(perf, pending[0], pending[1])


# --- builds -------------------------------------------------------------------------------


@dataclass
class Full:
    seconds: float
    rss: int | None
    reused: bool


def full_build(perf: Perf, again: bool) -> Full:
    """The full build from scratch, measured once per fleet and format (it is the slow one)."""
    record = perf.baseline / "full.json"
    if record.exists() and not again and perf.state().get("format") == perf.fmt:
        saved = json.loads(record.read_text())
        return Full(saved["seconds"], saved.get("rss"), True)
    clear_derived(perf.store)
    perf.state_path.unlink(missing_ok=True)
    child = bench(perf.store, "catalog", "build")
    print(f"  {child.out}", flush=True)
    perf.baseline.mkdir(parents=True, exist_ok=True)
    take_snapshot(perf)
    record.write_text(json.dumps({"seconds": child.seconds, "rss": child.rss}))
    perf.set_state(format=perf.fmt)
    return Full(child.seconds, child.rss, False)


def add_runs(perf: Perf, first: int, count: int) -> Child:
    """Write runs `first ..` into the store and build; the state names them until restore."""
    perf.set_state(format=perf.fmt, added=[first, count])
    make_fleet.make_fleet(perf.store, count, SEED, first=first, step_s=perf.step, workers=1)
    child = bench(perf.store, "catalog", "build")
    total = perf.runs + count
    if f"{count} new" not in child.out or f"{total} runs" not in child.out:
        raise SystemExit(f"unexpected build summary: {child.out}")
    return child


# --- git ----------------------------------------------------------------------------------


@dataclass
class Commit:
    """What one commit of the public catalog costs in git."""

    files: int
    insertions: int
    deletions: int
    pack_bytes: int
    shortstat: str


class Repo:
    """A git repo whose work tree is the store and whose git dir lives beside it: the public
    files are committed where they are, with no copy (at a million runs they are ~1 GB)."""

    def __init__(self, perf: Perf) -> None:
        self.perf = perf
        self.env = {
            **os.environ,
            "GIT_DIR": str(perf.git_dir),
            "GIT_WORK_TREE": str(perf.store),
            "GIT_AUTHOR_NAME": "perf",
            "GIT_AUTHOR_EMAIL": "perf@example.invalid",
            "GIT_COMMITTER_NAME": "perf",
            "GIT_COMMITTER_EMAIL": "perf@example.invalid",
        }

    def git(
        self, *args: str, stdin: bytes | None = None, keep_out: bool = True, ok: int = 0
    ) -> Child:
        """Run git; exit codes 0 and `ok` are answers (`diff --quiet` says 1 for "differs")."""
        child = run_child(
            ["git", *args], cwd=self.perf.store, env=self.env, stdin=stdin, keep_out=keep_out
        )
        if child.code not in (0, ok):
            raise SystemExit(f"git {' '.join(args)} failed ({child.code}): {child.err[-2000:]}")
        return child

    def add(self) -> None:
        """Stage the public files, deletions included. The store's other files are excluded
        in info/exclude, not by pathspec: a pathspec naming a path that is absent (no
        catalog/ in a v2 store) is an error to git."""
        self.git("add", "--all", "--", ".")

    def setup(self) -> float:
        """Commit the baseline (tag `baseline`), or reuse it when the store's public files
        are that tree. Returns the seconds spent."""
        started = time.perf_counter()
        if not (self.perf.git_dir / "HEAD").exists():
            self.git("init", "-q")
            for key, value in (
                ("gc.auto", "0"),
                ("commit.gpgsign", "false"),
                ("core.autocrlf", "false"),
            ):
                self.git("config", key, value)
            rules = ["/*", *(f"!/{name}" for name in PUBLIC)]
            (self.perf.git_dir / "info").mkdir(exist_ok=True)
            (self.perf.git_dir / "info" / "exclude").write_text("\n".join(rules) + "\n")
        self.add()
        has = self.git("rev-parse", "-q", "--verify", "refs/tags/baseline", ok=1).code == 0
        if has and self.git("diff", "--cached", "--quiet", "baseline", ok=1).code == 0:
            self.git("reset", "-q", "--soft", "baseline")
        else:
            self.git("commit", "-q", "--allow-empty", "-m", f"baseline: {self.perf.runs} runs")
            self.git("tag", "-f", "baseline")
        return time.perf_counter() - started

    def commit(self, message: str) -> Commit:
        """Commit the store's public files and measure that commit against its parent."""
        self.add()
        self.git("commit", "-q", "--allow-empty", "-m", message)
        names = self.git("diff", "--name-only", "HEAD~1", "HEAD").out.splitlines()
        stat = self.git("diff", "--shortstat", "HEAD~1", "HEAD").out
        numbers = self.git("diff", "--numstat", "HEAD~1", "HEAD").out.splitlines()
        plus = minus = 0
        for line in numbers:
            added, removed, _name = line.split("\t", 2)
            plus += int(added) if added.isdigit() else 0
            minus += int(removed) if removed.isdigit() else 0
        revs = b"HEAD\n^HEAD~1\n"
        pack = self.git(
            "pack-objects", "--revs", "--thin", "--stdout", "-q", stdin=revs, keep_out=False
        )
        return Commit(len(names), plus, minus, pack.out_bytes, stat)

    def back_to_baseline(self) -> None:
        """HEAD and the index back to the baseline; the work tree is restored separately."""
        self.git("reset", "-q", "baseline")


# --- queries ------------------------------------------------------------------------------


@dataclass
class Query:
    first: float
    times: list[float]
    rss: int


def query_times(store: Path, verb: str) -> Query | None:
    """`bench VERB --model smollm2-135m`: the first call (it may fill the query cache),
    then QUERY_REPEAT more; None where the verb does not exist."""
    probe = run_child([sys.executable, "-m", "benchlab", verb, "--help"])
    if probe.code != 0:
        return None
    first = bench(store, verb, "--model", MODEL)
    rest = [bench(store, verb, "--model", MODEL) for _ in range(QUERY_REPEAT)]
    rss = max(c.rss for c in [first, *rest])
    return Query(first.seconds, [c.seconds for c in rest], rss)


# --- report -------------------------------------------------------------------------------


def _mb(size: int | None) -> str:
    return "n/a" if size is None else f"{size / MB:.2f} MB"


def _times(values: list[float]) -> str:
    return f"[{', '.join(f'{t:.2f}' for t in values)}]"


def _row(
    rows: list[tuple[str, str, str, str]], name: str, value: str, target: str, ok: Any
) -> None:
    verdict = "-" if ok is None else ("yes" if ok else "NO")
    rows.append((name, value, target, verdict))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=RUNS, help="fleet size (default 100000)")
    parser.add_argument(
        "--format", choices=("v3",), help="v3 only: the v2 build is gone", default="v3"
    )
    parser.add_argument("--dir", type=Path, default=None, help="default /tmp/bl-perf-<size>")
    parser.add_argument("--rounds", type=int, default=3, help="+1,000 rounds (median)")
    parser.add_argument("--full-again", action="store_true", help="re-measure the full build")
    parser.add_argument("--workers", type=int, default=None, help="fleet generation processes")
    parser.add_argument("--fleet-only", action="store_true", help="generate the fleet and stop")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    perf = Perf(args.dir or default_dir(args.runs), args.runs, args.format)
    perf.root.mkdir(parents=True, exist_ok=True)
    fleet = ensure_fleet(perf, args.workers)
    if fleet.get("seconds") is not None:
        print(f"fleet: {perf.runs} runs generated in {fleet['seconds']} s", flush=True)
    if args.fleet_only:
        return 0
    recover(perf)

    print(f"full build from scratch ({args.format}) ...", flush=True)
    full = full_build(perf, args.full_again)
    name, size = largest_tracked(perf.store)
    tracked = public_files(perf.store)
    shards = sum(1 for n in tracked if n.startswith("catalog/"))

    print("git: committing the baseline ...", flush=True)
    repo = Repo(perf)
    print(f"  {repo.setup():.1f} s", flush=True)

    print(f"incremental build, +{ADDED} runs ...", flush=True)
    added: list[Child] = []
    pack: Commit | None = None
    for round_no in range(args.rounds):
        first = perf.runs + round_no * ADDED
        child = add_runs(perf, first, ADDED)
        print(f"  round {round_no + 1}: {child.seconds:.2f} s  {child.out}", flush=True)
        added.append(child)
        if round_no == 0:
            pack = repo.commit(f"+{ADDED} runs")
            repo.back_to_baseline()
        restore(perf, first, ADDED)

    print("one more run ...", flush=True)
    first = perf.runs + args.rounds * ADDED
    add_runs(perf, first, 1)
    one = repo.commit("+1 run")
    repo.back_to_baseline()
    restore(perf, first, 1)

    print("queries ...", flush=True)
    best = query_times(perf.store, "best")
    table = query_times(perf.store, "table")

    inc = [c.seconds for c in added]
    inc_rss = max(c.rss for c in added)
    print()
    print(f"fleet: {perf.runs} runs, seed {SEED}, in {perf.store}, catalog {args.format}")
    print(f"largest tracked catalog file:  {size / MB:8.2f} MB ({name})")
    print(
        f"tracked catalog files:         {len(tracked):8d}"
        f" (catalog.json, {shards} under catalog/, the rest under machines/)"
    )
    note = " (measured earlier on this fleet; --full-again to re-measure)" if full.reused else ""
    print(f"full build from scratch:       {full.seconds:8.2f} s, peak RSS {_mb(full.rss)}{note}")
    print(
        f"incremental build (+{ADDED}):    {statistics.median(inc):8.2f} s median of {len(inc)}"
        f"  {_times(inc)}, peak RSS {_mb(inc_rss)}"
    )
    for verb, found in (("best", best), ("table", table)):
        if found is None:
            print(f"bench {verb}:                    not measured (no `{verb}` verb)")
            continue
        print(
            f"bench {verb} --model {MODEL}: {statistics.median(found.times):6.2f} s median of "
            f"{len(found.times)} {_times(found.times)}, first call {found.first:.2f} s, "
            f"peak RSS {_mb(found.rss)}"
        )
    assert pack is not None
    for label, commit in ((f"+{ADDED} runs", pack), ("+1 run", one)):
        print(
            f"git commit of {label:10s}     {commit.files} files, +{commit.insertions} "
            f"-{commit.deletions} lines, thin pack {commit.pack_bytes / 1e3:.1f} KB"
            f"  ({commit.shortstat})"
        )

    rows: list[tuple[str, str, str, str]] = []
    _row(rows, "largest tracked file", _mb(size), "<= 20 MB", size <= TARGETS["largest"])
    _row(rows, "tracked catalog files", str(len(tracked)), "-", None)
    _row(rows, "full build", f"{full.seconds:.1f} s", "<= 120 s", full.seconds <= 120)
    rss_ok = None if full.rss is None else full.rss <= TARGETS["rss"]
    _row(rows, "full build peak RSS", _mb(full.rss), "<= 2 GB", rss_ok)
    med = statistics.median(inc)
    _row(rows, f"+{ADDED} build (median)", f"{med:.2f} s", "<= 5 s", med <= TARGETS["added_s"])
    _row(rows, f"+{ADDED} build peak RSS", _mb(inc_rss), "<= 2 GB", inc_rss <= TARGETS["rss"])
    for verb, found in (("best", best), ("table", table)):
        if found is None:
            _row(rows, f"bench {verb}", "n/a", "<= 1 s", None)
            continue
        value = statistics.median(found.times)
        _row(rows, f"bench {verb} (median)", f"{value:.2f} s", "<= 1 s", value <= 1.0)
        _row(rows, f"bench {verb} peak RSS", _mb(found.rss), "<= 2 GB", found.rss <= 2 * 10**9)
    _row(
        rows,
        f"pack growth, +{ADDED} runs",
        f"{pack.pack_bytes / 1e3:.1f} KB",
        "< 1 MB",
        pack.pack_bytes < TARGETS["pack"],
    )
    _row(rows, "files changed, +1 run", str(one.files), "<= 2", one.files <= 2)
    _row(rows, "lines changed, +1 run", f"+{one.insertions} -{one.deletions}", "a few", None)
    print()
    table_rows = [("measure", "value", "target", "ok"), *rows]
    widths = [max(len(row[i]) for row in table_rows) for i in range(4)]
    for row in table_rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
