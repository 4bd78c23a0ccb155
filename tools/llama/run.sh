#!/usr/bin/env bash
# Real llama.cpp end to end on this machine: build llama-bench from the llama-cpp-python
# sdist (cached), write the random-weight tiny GGUF (cached), then
# `bench run experiments/sweeps/llama-cpu.yaml`. Extra arguments go to `bench run`
# (--fresh, --dry-run, --concurrent). $BENCHLAB_LLAMA_CACHE moves the cache,
# $BENCHLAB_LLAMA_VERSION picks another llama-cpp-python version (see tools/llama/run.py).
set -euo pipefail
exec python3 "$(dirname "$0")/run.py" "$@"
