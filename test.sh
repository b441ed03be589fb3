#!/usr/bin/env bash
# Lint, format check and the whole test suite (CPU). CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/setup_env.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
# One worker per core (pytest-xdist); a module's tests stay on one worker, so its fixtures (a
# frozen example, a PostgreSQL server) are made once. `./test.sh -n 0` runs in this process.
# --durations: every run ends with its 25 slowest steps, so CI's log says where the time went.
exec .venv/bin/python -m pytest -q -n auto --dist loadscope --durations=25 "$@"
