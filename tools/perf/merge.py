"""A real two-clone git merge of the v3 catalog at N runs, through the merge driver.

    python tools/perf/merge.py [--runs 100000] [--dir DIR] [--added K] [--cold]

The target: a real two-clone merge at 1M runs through the driver completes and validates.

1. The N-run fleet and its v3 build come from tools/perf/catalog.py's perf dir (DIR/store,
   default /tmp/bl-perf-<size>): reused when built, generated and built otherwise.
2. A seed repo (DIR/merge/seed) commits the public files (catalog.json, catalog/, machines/)
   under experiments/benchmark/, with runs/ gitignored and `.gitattributes` from
   `bench catalog install-merge-driver`; clones A and B are made from it with `git clone` and
   each runs install-merge-driver (the driver lives in .git/config, which a clone lacks).
3. Each clone writes K new runs into its private runs/ (A the even, B the odd indices after the
   fleet, so both land in the same newest shards), plus one run present in both whose record
   differs in B; `bench catalog build`; commit.
4. In A: `git fetch` B, then `git merge` B's branch, timed, with its peak RSS (git's and the
   drivers' it reaped, from os.wait4).
5. Validation: the merge exits 0 with a clean tree and no conflict markers; the shared run,
   measured differently by the two clones, is a conflict: `bench catalog validate` exits 1
   naming it, and `load_catalog` (in a child, for its RSS) holds N + 2K unique runs, every
   new id, and not the shared one. Then `bench catalog resolve` keeps B's copy (timed),
   `validate` passes and the loader holds N + 2K + 1 runs, the shared one as B measured it.

Clones are warm by default: their checked-out public files are hard links to the perf store's
(same bytes as the seed commit, same inodes as its build cache knows) and runs/ gets a copy of
that cache, so each clone's build is the incremental one a lab machine with a built clone runs
(no view of a million runs written twice over). `--cold` keeps git's
own checkout, and each clone's first build reads every shard and writes every view, as on a
fresh clone. Either way the merge itself is git's and the driver's, untouched. K defaults to
500 per clone, fewer on small fleets so that the new runs span about three days (as a night's
sweeps do) and the smoke test at --runs 2000 stays well under a minute.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# Siblings: `python tools/perf/merge.py` puts tools/perf first on sys.path (ruff sorts
# make_fleet as first-party and catalog, a name it cannot place, as third-party).
import make_fleet

import catalog as perf_catalog

STORE = Path("experiments") / "benchmark"
BRANCH = "main"
SPAN_S = 3 * 24 * 3600
"""The new runs of both clones together span at most this long (more on big fleets never)."""
GIT_ENV = {
    "GIT_AUTHOR_NAME": "perf",
    "GIT_AUTHOR_EMAIL": "perf@example.invalid",
    "GIT_COMMITTER_NAME": "perf",
    "GIT_COMMITTER_EMAIL": "perf@example.invalid",
}
CHECK = """
import json, sys
from pathlib import Path
from benchlab.catalog.read import load_catalog
store, wanted_path, shared = sys.argv[1], sys.argv[2], sys.argv[3]
runs = load_catalog(Path(store) / "catalog.json").runs
ids = [e["run_id"] for e in runs]
have = set(ids)
wanted = json.loads(Path(wanted_path).read_text())
found = [e for e in runs if e["run_id"] == shared]
print(json.dumps({"runs": len(ids), "unique": len(have),
                  "missing": sorted(set(wanted) - have)[:5],
                  "shared": found[0] if found else None}))
"""
"""Run in a child: a million loaded entries are a few GB, measured there and freed with it."""


def git(repo: Path, *args: str, ok: tuple[int, ...] = (0,)) -> perf_catalog.Child:
    child = perf_catalog.run_child(["git", *args], cwd=repo, env={**os.environ, **GIT_ENV})
    if child.code not in ok:
        raise SystemExit(f"git {' '.join(args)} in {repo} failed ({child.code}): {child.err}")
    return child


def bench(store: Path, *args: str, check: bool = True) -> perf_catalog.Child:
    return perf_catalog.bench(store, *args, check=check)


def default_added(runs: int) -> int:
    """500 runs per clone, or as many as fit in SPAN_S at this fleet's spacing."""
    step = make_fleet.default_step(runs)
    return max(1, min(500, SPAN_S // (2 * step)))


def link_tree(src: Path, dst: Path, names: list[str]) -> None:
    """Hard-link `names` (relative paths) from src into dst, replacing what is there."""
    for name in names:
        target = dst / name
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.link")
        tmp.unlink(missing_ok=True)
        os.link(src / name, tmp)
        os.replace(tmp, target)


def make_seed(perf: perf_catalog.Perf, seed: Path) -> float:
    """The seed repo: the perf store's public files (hard links) committed with the driver's
    .gitattributes. Returns the seconds spent."""
    started = time.perf_counter()
    seed.mkdir(parents=True)
    git(seed, "init", "-q", "-b", BRANCH)
    git(seed, "config", "gc.auto", "0")
    (seed / ".gitignore").write_text(f"{STORE.as_posix()}/runs/\n")
    link_tree(perf.store, seed / STORE, perf_catalog.public_files(perf.store))
    install = bench(seed / STORE, "catalog", "install-merge-driver")
    print(f"  {install.out.splitlines()[0] if install.out else ''}", flush=True)
    git(seed, "add", ".gitignore", ".gitattributes", STORE.as_posix())
    git(seed, "commit", "-q", "-m", f"seed: {perf.runs} runs")
    return time.perf_counter() - started


def make_clone(perf: perf_catalog.Perf, seed: Path, repo: Path, cold: bool) -> float:
    """A clone with the driver installed. Warm: the checkout is hard links to the perf store's
    files (the same bytes as the seed's commit) and runs/ gets its build cache, as a lab
    machine's long-lived clone has. Returns the seconds spent."""
    started = time.perf_counter()
    if cold:
        git(seed.parent, "clone", "-q", str(seed), str(repo))
    else:
        git(seed.parent, "clone", "-q", "--no-checkout", str(seed), str(repo))
        store = repo / STORE
        link_tree(perf.store, store, perf_catalog.public_files(perf.store))
        for name in perf_catalog.private_files(perf.store):
            (store / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(perf.store / name, store / name)
        for view in ("by-model", "by-date"):
            (store / "runs" / view).mkdir(parents=True, exist_ok=True)
        git(repo, "checkout", "-q", "HEAD", "--", ".gitignore", ".gitattributes")
        git(repo, "reset", "-q")
        status = git(repo, "status", "--porcelain", "--untracked-files=no").out
        if status:
            raise SystemExit(f"{repo}: the linked files differ from the seed commit:\n{status}")
    bench(repo / STORE, "catalog", "install-merge-driver")
    return time.perf_counter() - started


def shared_index(first: int, step: int) -> int:
    """The first index from `first` whose run is ok and carries record metrics (so its entry
    can be made to differ in one clone). Bounded: most runs qualify."""
    for index in range(first, first + 200):
        docs = make_fleet.run_documents(perf_catalog.SEED, index, step)
        record = docs.get("record.json")
        if record is not None and record.get("status") == "ok" and "metrics" in record:
            return index
    raise SystemExit(f"no run with record metrics in indices {first}..{first + 199}")


def add_runs(store: Path, indices: range, step: int) -> list[str]:
    """Write the runs at `indices` (one make_fleet call each: they are not contiguous)."""
    ids = []
    for index in indices:
        ids += make_fleet.make_fleet(store, 1, perf_catalog.SEED, first=index, step_s=step)
    return ids


def alter_run(store: Path, run_id: str) -> None:
    """Make this clone's copy of a shared run differ: its peak is 1 % higher (a re-measured
    run). The two clones' entries then differ in a metric: a conflict the merge keeps."""
    [run_dir] = list((store / "runs" / "by-machine").glob(f"*/{run_id}"))
    record_path = run_dir / "record.json"
    record = json.loads(record_path.read_text())
    record["metrics"]["peak_tok_per_sec"] = round(record["metrics"]["peak_tok_per_sec"] * 1.01, 2)
    record_path.write_text(json.dumps(record, sort_keys=True))


def entry_of(repo: Path, run_id: str) -> dict[str, Any]:
    """The catalog entry of `run_id` in a clone, read from the shards its last commit changed."""
    from benchlab.catalog.shards import SHARD_SUFFIX, read_shard

    names = git(repo, "diff", "--name-only", "HEAD~1", "HEAD").out.splitlines()
    for name in names:
        if name.endswith(SHARD_SUFFIX):
            for entry in read_shard(repo / name, name):
                if entry["run_id"] == run_id:
                    return entry
    raise SystemExit(f"{repo}: {run_id} is in no shard the last commit changed")


def resolve_theirs(
    store: Path, run_id: str, ours: dict[str, Any], theirs: dict[str, Any]
) -> perf_catalog.Child:
    """`bench catalog resolve RUN --keep N` with N the place of B's copy (copies are listed
    in the order of what they measured, `order.measurement`), committed."""
    from benchlab.catalog.order import measurement

    keep = 1 + sorted([ours, theirs], key=measurement).index(theirs)
    child = bench(store, "catalog", "resolve", run_id, "--keep", str(keep))
    git(store.parents[1], "commit", "-q", "-am", f"resolve {run_id}")
    return child


def _mb(size: int) -> str:
    return f"{size / perf_catalog.MB:.1f} MB"


def check_merged(
    store: Path, total: int, wanted: list[str], shared_id: str, conflicts: int = 0
) -> tuple[dict[str, Any], list[str]]:
    """Validate the merged clone: a clean tree without conflict markers (else exit), then
    `bench catalog validate` (exit 1 naming `shared_id` where `conflicts`) and
    `load_catalog` in children. Returns what the loader saw and the problems found."""
    repo = store.parents[1]
    status = git(repo, "status", "--porcelain", "--untracked-files=no").out
    if status:
        raise SystemExit(f"the merged tree is not clean:\n{status}")
    pattern = "^(<<<<<<<|>>>>>>>|=======)"
    markers = git(repo, "grep", "-n", "-E", pattern, "--", STORE.as_posix(), ok=(0, 1))
    if markers.code == 0:
        raise SystemExit(f"conflict markers in the merged catalog:\n{markers.out[:2000]}")
    validate = bench(store, "catalog", "validate", check=False)
    said = validate.out or validate.err.splitlines()[-1]
    print(f"  validate: {validate.seconds:.2f} s, peak RSS {_mb(validate.rss)}: {said}")
    if conflicts:
        if validate.code != 1 or f"error: conflict: {shared_id}: 2 copies" not in validate.err:
            raise SystemExit(f"validate did not report the conflict: {validate.err[-2000:]}")
    elif validate.code != 0 or f"{total} runs valid" not in validate.out:
        raise SystemExit(f"validate counted other than {total} runs: {validate.out}")
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(wanted, handle)
    try:
        check = perf_catalog.run_child(
            [sys.executable, "-c", CHECK, str(store), handle.name, shared_id]
        )
    finally:
        os.unlink(handle.name)
    if check.code != 0:
        raise SystemExit(f"load_catalog failed: {check.err[-2000:]}")
    loaded = json.loads(check.out)
    print(f"  load_catalog: {check.seconds:.2f} s, peak RSS {_mb(check.rss)}")
    problems = []
    if loaded["runs"] != total or loaded["unique"] != total:
        problems.append(f"{loaded['runs']} runs ({loaded['unique']} unique), expected {total}")
    if loaded["missing"]:
        problems.append(f"new runs missing: {loaded['missing']}")
    return loaded, problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=perf_catalog.RUNS, help="fleet size N")
    parser.add_argument("--dir", type=Path, default=None, help="default /tmp/bl-perf-<size>")
    parser.add_argument("--added", type=int, default=None, help="new runs per clone")
    parser.add_argument("--cold", action="store_true", help="clones start with no build cache")
    parser.add_argument("--workers", type=int, default=None, help="fleet generation processes")
    args = parser.parse_args(argv)
    os.environ[perf_catalog.FORMAT_ENV] = "v3"
    perf = perf_catalog.Perf(args.dir or perf_catalog.default_dir(args.runs), args.runs, "v3")
    perf.root.mkdir(parents=True, exist_ok=True)
    perf_catalog.ensure_fleet(perf, args.workers)
    perf_catalog.recover(perf)
    full = perf_catalog.full_build(perf, again=False)
    note = "reused" if full.reused else "built now"
    print(f"v3 store: {perf.runs} runs in {perf.store} ({note}, {full.seconds:.1f} s)")
    guard = {
        name: (st.st_size, st.st_mtime_ns)
        for name in perf_catalog.public_files(perf.store)
        for st in [(perf.store / name).stat()]
    }

    step = perf.step
    added = args.added or default_added(perf.runs)
    work = perf.root / "merge"
    if work.exists():
        shutil.rmtree(work)
    seed, alice, bob = work / "seed", work / "a", work / "b"
    print("seed repo ...", flush=True)
    print(f"  {make_seed(perf, seed):.1f} s", flush=True)
    for repo in (alice, bob):
        print(f"clone {repo.name} ({'cold' if args.cold else 'warm'}) ...", flush=True)
        print(f"  {make_clone(perf, seed, repo, args.cold):.1f} s", flush=True)
    driver = git(alice, "config", "merge.benchlab-catalog.driver").out
    print(f"  driver: {driver}")

    first = perf.runs
    shared = shared_index(first + 2 * added, step)
    wanted: list[str] = []
    shared_id = ""
    for repo, offset in ((alice, 0), (bob, 1)):
        store = repo / STORE
        ids = add_runs(store, range(first + offset, first + 2 * added, 2), step)
        [shared_id] = add_runs(store, range(shared, shared + 1), step)
        if repo is bob:
            alter_run(store, shared_id)
        wanted += ids
        child = bench(store, "catalog", "build")
        print(
            f"clone {repo.name}: +{len(ids)} runs +1 shared, build {child.seconds:.1f} s, "
            f"peak RSS {_mb(child.rss)}: {child.out}",
            flush=True,
        )
        git(repo, "add", "--all", STORE.as_posix())
        git(repo, "commit", "-q", "-m", f"{repo.name}: {len(ids) + 1} runs")
    wanted.append(shared_id)
    ours, theirs = entry_of(alice, shared_id), entry_of(bob, shared_id)
    if ours == theirs:
        raise SystemExit(f"the shared run {shared_id} has the same entry in both clones")
    expected_shared = theirs  # B's copy, kept by `resolve` below

    git(alice, "fetch", "-q", str(bob), f"{BRANCH}:refs/remotes/b/{BRANCH}")
    base = git(alice, "merge-base", "HEAD", f"b/{BRANCH}").out
    side_a = set(git(alice, "diff", "--name-only", base, "HEAD").out.splitlines())
    side_b = set(git(alice, "diff", "--name-only", base, f"b/{BRANCH}").out.splitlines())
    both = sorted(side_a & side_b)
    print(
        f"merging: A changed {len(side_a)} files, B {len(side_b)}, both {len(both)} "
        "(each merged by the driver)",
        flush=True,
    )
    merge = git(alice, "merge", "--no-edit", f"b/{BRANCH}", ok=(0, 1))
    if merge.code != 0:
        raise SystemExit(f"git merge failed ({merge.code}):\n{merge.out}\n{merge.err}")
    print(f"  merge: {merge.seconds:.2f} s, peak RSS {_mb(merge.rss)}", flush=True)

    total = perf.runs + len(wanted)
    wanted_now = [run_id for run_id in wanted if run_id != shared_id]
    loaded, problems = check_merged(alice / STORE, total - 1, wanted_now, shared_id, 1)
    if loaded["shared"] is not None:
        problems.append(f"the shared run {shared_id} in conflict is answered by one copy")
    resolve = resolve_theirs(alice / STORE, shared_id, ours, theirs)
    print(f"  resolve: {resolve.seconds:.2f} s, peak RSS {_mb(resolve.rss)}: {resolve.out}")
    loaded, more = check_merged(alice / STORE, total, wanted, shared_id)
    problems += more
    if loaded["shared"] != expected_shared:
        problems.append(f"the shared run {shared_id} is not B's copy after resolve")
    changed = [
        name
        for name, sig in guard.items()
        if (perf.store / name).exists()
        and ((perf.store / name).stat().st_size, (perf.store / name).stat().st_mtime_ns) != sig
    ]
    if changed:
        problems.append(f"the perf store's files changed under the clones: {changed[:3]}")
    print()
    print(f"fleet N = {perf.runs}, +{added} runs in A, +{added} in B, 1 run in both (differing)")
    print(
        f"merge (git merge, {len(both)} files through the driver): {merge.seconds:.2f} s, "
        f"peak RSS {_mb(merge.rss)}"
    )
    print(f"resolve (bench catalog resolve, one run): {resolve.seconds:.2f} s")
    print(f"merged catalog: {loaded['runs']} runs, expected {total} = N + {2 * added} + 1")
    if problems:
        for line in problems:
            print(f"FAILED: {line}")
        return 1
    print(
        "validated: clean tree, no conflict markers, the shared run a reported conflict "
        "until resolved, then `bench catalog validate` passes, every new run present once"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
