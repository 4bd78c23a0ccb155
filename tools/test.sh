#!/usr/bin/env bash
# The test command (README and .ci/run call this same script): lint, schemas, then pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
export NO_MKDOCS_2_WARNING=1 DVC_NO_ANALYTICS=1
ruff check .
ruff format --check .
bench schemas
bench scan --tracked
python3 -m pytest -q "$@"
