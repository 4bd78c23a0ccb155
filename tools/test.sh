#!/usr/bin/env bash
# The test command (README and .ci/run call this same script): lint, types, schemas, then pytest.
#
#   tools/test.sh [PYTEST ARGS]          the full suite: what CI runs
#   tools/test.sh --fast [PYTEST ARGS]   ruff, mypy and the unit and property tests only (no
#                                        integration or slow test, no schema or leak scan): the
#                                        lane to run while working, a few minutes on 2 cores
#
# Either way pytest lists its slowest tests at the end (--durations), so a test that grows
# slow is seen; one that takes more than a few seconds gets @pytest.mark.slow.
set -euo pipefail
cd "$(dirname "$0")/.."
export NO_MKDOCS_2_WARNING=1 DVC_NO_ANALYTICS=1
fast=0
if [ "${1:-}" = "--fast" ]; then
  fast=1
  shift
fi
ruff check .
ruff format --check .
python3 -m mypy  # the files and strictness are pyproject.toml's [tool.mypy]
if [ "$fast" = 1 ]; then
  exec python3 -m pytest -q --durations=15 -m "not integration and not slow" "$@"
fi
bench schemas
bench scan --tracked
python3 -m pytest -q --durations=15 "$@"
