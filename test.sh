#!/usr/bin/env bash
# Lint, format check and the whole test suite (CPU). CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/setup_env.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
# One worker per core and one more (pytest-xdist): the service and command-line tests spend
# part of their time waiting on servers and subprocesses, and a third worker on this 2-core
# host took the suite from 873 s to 727 s (docs/testing.md). A module's tests stay on one
# worker, so its fixtures (a frozen example, a PostgreSQL server) are made once. `./test.sh
# -n 0` runs in this process. --durations: every run ends with its 25 slowest steps, so CI's
# log says where the time went.
workers=$(($(nproc) + 1))
exec .venv/bin/python -m pytest -q -n "$workers" --dist loadscope --durations=25 "$@"
