"""A two-clone merge of a 1,000,000-run catalog through the driver, from the perf baseline.

    python tools/perf/catalog.py --runs 1000000        # leaves the baseline commit in git
    python tools/perf/make_fleet.py --runs 1000 --first 1000000 --step-s 15 --out /tmp/pk1k
    bench --store /tmp/pk1k catalog build               # the 1,000 new runs' shard lines
    python tools/perf/merge_git.py [--git-dir /tmp/bl-perf-1m/git-v3] [--added /tmp/pk1k]

tools/perf/merge.py makes each clone's commit with `bench catalog build`, which at a million
runs needs each clone's private build cache; this script makes the two clones' commits from
the new runs' shard lines directly (as a build would write them: `shards.union`), so it needs
only the baseline commit. Clone A adds the even new runs, clone B the odd ones, and both add
one run with different numbers; then A merges B with `git merge`, the driver installed by
`bench catalog install-merge-driver`. Prints the merge's wall time and peak RSS, the shards
the driver merged, and checks the result with `bench catalog validate`.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

from benchlab.catalog.shards import parse_lines, render_shard, shard_name, union

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--git-dir", type=Path, default=Path("/tmp/bl-perf-1m/git-v3"))
parser.add_argument("--added", type=Path, default=Path("/tmp/pk1k"))
parser.add_argument("--work", type=Path, default=Path("/tmp/bl-merge-git"))
args = parser.parse_args()
IDENT = {
    "GIT_AUTHOR_NAME": "perf",
    "GIT_AUTHOR_EMAIL": "perf@benchlab.invalid",
    "GIT_COMMITTER_NAME": "perf",
    "GIT_COMMITTER_EMAIL": "perf@benchlab.invalid",
}


def git(cwd: Path, *argv: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        ["git", *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, **IDENT, **(env or {})},
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"git {' '.join(argv)}: {done.stderr.strip()[-2000:]}")
    return done.stdout


def new_runs() -> list[dict]:
    found = []
    for path in sorted((args.added / "catalog").rglob("*.jsonl")):
        found += parse_lines(path.read_bytes(), str(path))
    return sorted(found, key=lambda e: e["run_id"])


def add_to_clone(repo: Path, entries: list[dict], message: str) -> int:
    """Write `entries` into the clone's shards as a build would, commit; returns files."""
    by_shard: dict[str, list[dict]] = {}
    for entry in entries:
        by_shard.setdefault(shard_name(entry), []).append(entry)
    for name, mine in by_shard.items():
        path = repo / name
        held = parse_lines(path.read_bytes(), name) if path.exists() else []
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(render_shard(union(held, mine).values()))
    git(repo, "add", "-A", "catalog")
    git(repo, "commit", "-q", "-m", message)
    return len(by_shard)


def main() -> int:
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    seed = args.work / "seed"
    git(args.work, "clone", "-q", "--shared", "--branch", "baseline", str(args.git_dir), str(seed))
    git(seed, "checkout", "-q", "-b", "main")
    for path in sorted((seed / "catalog").rglob("*.jsonl")):  # today's shard names
        machine = path.parent.name
        if not path.name.endswith(f".{machine}.jsonl"):
            path.rename(path.with_name(f"{path.stem}.{machine}.jsonl"))
    subprocess.run(
        ["bench", "--store", str(seed), "catalog", "install-merge-driver"],
        check=True,
        capture_output=True,
    )
    git(seed, "add", "-A", ".")
    git(seed, "commit", "-q", "-m", "baseline with machine-suffixed shard names")
    runs = new_runs()
    shared = dict(runs[1], peak_tok_per_sec=round(runs[1]["peak_tok_per_sec"] * 1.01, 2))
    clones = {}
    for name, mine in (("a", [*runs[0::2], shared]), ("b", runs[1::2])):
        repo = args.work / name
        git(args.work, "clone", "-q", "--shared", str(seed), str(repo))
        subprocess.run(
            ["bench", "--store", str(repo), "catalog", "install-merge-driver"],
            check=True,
            capture_output=True,
        )
        files = add_to_clone(repo, mine, f"clone {name}: {len(mine)} runs")
        print(f"clone {name}: {len(mine)} new runs in {files} shards", flush=True)
        clones[name] = repo
    a, b = clones["a"], clones["b"]
    git(a, "fetch", "-q", str(b), "main:theirs")
    log = args.work / "merge.trace"
    started = time.perf_counter()
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            ["git", "merge", "--no-edit", "theirs"],
            cwd=a,
            stdout=sink,
            stderr=sink,
            env={**os.environ, **IDENT, "GIT_TRACE": "2"},
        )
        _, status, usage = os.wait4(proc.pid, 0)
    merged_s = time.perf_counter() - started
    trace = log.read_bytes()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"merge failed: {trace.decode(errors='replace')[-3000:]}")
    drivers = len(re.findall(rb"catalog merge-driver", trace))
    print(
        f"git merge: {merged_s:.2f} s, peak RSS {usage.ru_maxrss / 1024:.0f} MB (the largest "
        f"of git and its children); the driver ran {drivers} times; work tree clean: "
        f"{git(a, 'status', '--porcelain') == ''}",
        flush=True,
    )
    started = time.perf_counter()
    check = subprocess.run(
        ["bench", "--store", str(a), "catalog", "validate"],
        capture_output=True,
        text=True,
        check=False,
    )
    print(
        f"bench catalog validate: exit {check.returncode} in {time.perf_counter() - started:.1f}"
        f" s: {check.stdout.strip()} {check.stderr.strip()[-300:]}"
    )
    return check.returncode


if __name__ == "__main__":
    raise SystemExit(main())
