#!/usr/bin/env bash
# Build a tiny package in a git repo over 5 commits (commit 4 plants a slowdown in
# slow_sum) and run asv 0.6 on every commit with the current Python: no network.
# Usage: make_asv_results.sh OUT_DIR  (SANITIZE=1: neutral environment names)
set -euo pipefail
out=${1:?results dir to write}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
git init -q -b main proj && cd proj
git config user.email t@example.invalid && git config user.name t
mkdir -p tinypkg benchmarks
cat > asv.conf.json <<'JSON'
{"version": 1, "project": "tinypkg", "repo": ".", "branches": ["main"],
 "environment_type": "existing", "benchmark_dir": "benchmarks",
 "results_dir": "results", "html_dir": "html", "build_command": [], "install_command": []}
JSON
cat > benchmarks/__init__.py <<'PY'
PY
cat > benchmarks/bench_tiny.py <<'PY'
import sys, os
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import importlib
import tinypkg


class TimeSum:
    params = ([100, 1000], ["list", "tuple"])
    param_names = ["n", "kind"]

    def setup(self, n, kind):
        importlib.reload(tinypkg)
        self.data = list(range(n)) if kind == "list" else tuple(range(n))

    def time_slow_sum(self, n, kind):
        tinypkg.slow_sum(self.data)


def time_join():
    importlib.reload(tinypkg)
    tinypkg.join_words(200)


def track_items():
    return 42
PY
for i in 1 2 3 4 5; do
  delay=0
  if [ "$i" -ge 4 ]; then delay=1; fi
  cat > tinypkg/__init__.py <<PY
import time
VERSION = $i
def slow_sum(data):
    if $delay:
        time.sleep(0.002)
    return sum(data)
def join_words(n):
    return " ".join(str(k) for k in range(n))
PY
  git add -A && GIT_COMMITTER_DATE="2026-01-0${i}T12:00:00Z" GIT_AUTHOR_DATE="2026-01-0${i}T12:00:00Z" git commit -q -m "commit $i"
done
asv machine --yes --machine tiny-box --os linux --arch x86_64 --cpu "test cpu" \
  --num_cpu 1 --ram 1 >/dev/null
# --python=same measures only the working tree: check out each commit and record it.
for rev in $(git rev-list --reverse main); do
  git checkout -q "$rev"
  asv run --python=same --machine tiny-box --set-commit-hash "$rev" -a repeat=3 -a number=1 >/dev/null 2>&1
done
git checkout -q main
mkdir -p "$out"
cp -r results/. "$out"/
if [ "${SANITIZE:-0}" = 1 ]; then
  # For the copy kept under tests/data: the environment's name holds this box's Python
  # path; only names change, never a result.
  python3 - "$out" <<'PY'
import json, pathlib, sys
for path in pathlib.Path(sys.argv[1]).glob("*/*.json"):
    data = json.loads(path.read_text())
    if "env_name" in data:
        data["env_name"] = "existing-py"
        data["python"] = "3"
        data.get("params", {})["python"] = "3"
        path.write_text(json.dumps(data, indent=4, sort_keys=True))
        path.rename(path.with_name(path.name.split("-")[0] + "-existing-py.json"))
PY
fi
