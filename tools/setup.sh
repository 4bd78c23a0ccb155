#!/usr/bin/env bash
# The quick start's installer: a virtualenv (.venv) holding benchlab and the extras the
# pipeline uses (`site`: mkdocs; `pipeline`: dvc). No root, no apt, no npm, Linux or macOS.
# Idempotent. EXTRAS=notebook adds pandas (benchlab.open_catalog(...).to_pandas()); PYTHON
# picks the interpreter (3.10 or newer). The tests' installer is tools/ci-setup.sh (apt).
#
#   tools/setup.sh && . .venv/bin/activate && dvc repro
set -euo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-python3}"
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
  echo "setup.sh: benchlab needs Python 3.10 or newer; $python is not (set PYTHON=...)" >&2
  exit 1
fi
[ -x .venv/bin/python ] || "$python" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[site,pipeline${EXTRAS:+,$EXTRAS}]"
echo "setup.sh: ready; next: . .venv/bin/activate && dvc repro"
