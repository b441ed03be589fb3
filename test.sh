#!/usr/bin/env bash
# Lint, format check and the whole test suite (CPU). CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/setup_env.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
exec .venv/bin/python -m pytest -q "$@"
