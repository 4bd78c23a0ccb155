#!/usr/bin/env bash
# A longer asv history with several steps, measured by real asv 0.6 and published by it:
# a tiny package over 12 commits in a local git repo (no network) and `asv publish`, whose
# html/regressions.json lists the regressions asv finds. Benchmarks:
#   track_open   ~100 (a fixed jitter of up to 1 per commit), 130 from commit 5 on
#   track_fixed  ~100, 130 at commits 4-7, ~100 again from commit 8 (a regression fixed)
#   track_flat   ~100 throughout
#   time_open    a 20 ms sleep, 40 ms from commit 5 on (a real timing: on a busy machine
#                asv may list a chance jump of it too)
# Usage: make_asv_history.sh OUT_DIR  -> OUT_DIR/results (asv results), OUT_DIR/html
set -euo pipefail
out=${1:?output dir to write}
commits=${COMMITS:-12}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
git init -q -b main proj && cd proj
git config user.email t@example.invalid && git config user.name t
mkdir -p stepped benchmarks
cat > asv.conf.json <<'JSON'
{"version": 1, "project": "stepped", "repo": ".", "branches": ["main"],
 "environment_type": "existing", "benchmark_dir": "benchmarks",
 "results_dir": "results", "html_dir": "html", "build_command": [], "install_command": []}
JSON
: > benchmarks/__init__.py
cat > benchmarks/bench_steps.py <<'PY'
import importlib
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import stepped


def setup():
    importlib.reload(stepped)


def track_open():
    return 100 + stepped.JITTER + stepped.OPEN


def track_fixed():
    return 100 - stepped.JITTER + stepped.FIXED


def track_flat():
    return 100 + stepped.JITTER


def time_open():
    time.sleep(0.02 + stepped.OPEN / 1500)
PY
jitter=(0.0 0.8 -0.5 0.3 -0.9 0.6 -0.2 0.4 -0.7 0.1 0.9 -0.4 0.2 -0.6 0.5 -0.3)
for i in $(seq 1 "$commits"); do
  open=0 fixed=0
  if [ "$i" -ge 5 ]; then open=30; fi
  if [ "$i" -ge 4 ] && [ "$i" -le 7 ]; then fixed=30; fi
  printf 'VERSION = %s\nOPEN = %s\nFIXED = %s\nJITTER = %s\n' \
    "$i" "$open" "$fixed" "${jitter[$(( (i - 1) % 16 ))]}" > stepped/__init__.py
  stamp=$(printf '2026-02-%02dT12:00:00Z' "$i")
  git add -A && GIT_COMMITTER_DATE=$stamp GIT_AUTHOR_DATE=$stamp git commit -q -m "commit $i"
done
asv machine --yes --machine step-box --os linux --arch x86_64 --cpu "test cpu" \
  --num_cpu 1 --ram 1 >/dev/null
for rev in $(git rev-list --reverse main); do
  git checkout -q "$rev"
  asv run --python=same --machine step-box --set-commit-hash "$rev" \
    -a repeat=3 -a number=1 -a warmup_time=0 >/dev/null 2>&1
done
git checkout -q main
asv publish >/dev/null 2>&1
mkdir -p "$out"
cp -r results "$out"/results
cp -r html "$out"/html
