"""What a push of 1,000 new runs costs with each shard naming: the thin pack (what `git push`
sends) of the commit that adds them, with week-only shard names (`<week>.jsonl`, the first v3
layout) and with the machine id ending the name (`<week>.<machine>.jsonl`, today's).

    python tools/perf/catalog.py --runs 1000000        # leaves the baseline commit in git
    python tools/perf/make_fleet.py --runs 1000 --first 1000000 --step-s 15 --out /tmp/pk1k
    bench --store /tmp/pk1k catalog build               # the 1,000 new runs' shard lines
    python tools/perf/pack_names.py [--git-dir /tmp/bl-perf-1m/git-v3] [--added /tmp/pk1k]

Both commits are made with git plumbing from the same blobs: the baseline's shards (renamed
or not) plus the new runs' lines merged in as a build merges them (`shards.union`), so the
only difference is the file names. Git pairs a file with its old version for delta
compression by a hash of the path's last 16 characters and takes one thin-pack base per hash.
"""

from __future__ import annotations

import argparse
import os
import subprocess

from benchlab.catalog.shards import parse_lines, render_shard, union

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--git-dir", default="/tmp/bl-perf-1m/git-v3")
parser.add_argument("--added", default="/tmp/pk1k", help="a store holding the new runs' shards")
args = parser.parse_args()
GD = args.git_dir
env = dict(
    os.environ,
    GIT_DIR=GD,
    GIT_INDEX_FILE=os.path.join(GD, "pack-names.index"),
    GIT_AUTHOR_NAME="perf",
    GIT_AUTHOR_EMAIL="perf@benchlab.invalid",
    GIT_COMMITTER_NAME="perf",
    GIT_COMMITTER_EMAIL="perf@benchlab.invalid",
)


def git(*a: str, inp: bytes | None = None) -> bytes:
    return subprocess.run(["git", *a], env=env, input=inp, capture_output=True, check=True).stdout


base = git("rev-parse", "baseline").strip().decode()
listing = git("ls-tree", "-r", base).decode().splitlines()
files: dict[str, str] = {}
for line in listing:
    meta, path = line.split("\t", 1)
    files[path] = meta.split()[2]
added: dict[tuple[str, str], list[dict]] = {}
for m in sorted(os.listdir(f"{args.added}/catalog")):
    for f in os.listdir(f"{args.added}/catalog/{m}"):
        week = f.split(".")[0]
        added[(m, week)] = parse_lines(open(f"{args.added}/catalog/{m}/{f}", "rb").read(), f)


def commit(rename: bool, parent: str, newblobs: bool) -> str:
    """A commit of the baseline's public files (shards renamed or not), with the new runs'
    lines merged into their shards when `newblobs`."""
    git("read-tree", "--empty")
    entries = []
    for path, blob in files.items():
        if path.startswith("catalog/") and rename:
            _, m, f = path.split("/")
            path = f"catalog/{m}/{f[:-6]}.{m}.jsonl"
        entries.append((path, blob))
    out = []
    for path, blob in entries:
        parts = path.split("/")
        key = (parts[1], parts[2].split(".")[0]) if path.startswith("catalog/") else None
        if newblobs and key in added:
            old = parse_lines(git("cat-file", "blob", blob), path)
            data = render_shard(union(old, added[key]).values())
            blob = git("hash-object", "-w", "--stdin", inp=data).strip().decode()
        out.append(f"100644 {blob}\t{path}")
    git("update-index", "--index-info", inp=("\n".join(out) + "\n").encode())
    tree = git("write-tree").strip().decode()
    return git("commit-tree", tree, "-p", parent, "-m", "x").strip().decode()


for rename in (False, True):
    a = commit(rename, base, False)
    b = commit(rename, a, True)
    stat = git("diff", "--shortstat", a, b).decode().strip()
    size = len(
        git("pack-objects", "--revs", "--thin", "--stdout", "-q", inp=f"{b}\n^{a}\n".encode())
    )
    names = "<week>.<machine>.jsonl" if rename else "<week>.jsonl          "
    print(f"{names}: {stat}; thin pack {size / 1024:.1f} KB")
