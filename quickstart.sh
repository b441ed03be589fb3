#!/usr/bin/env bash
# Set up .venv (keeping any torch build already installed) and run a bake-off on a shipped example.
# Usage: ./quickstart.sh [KERNEL_PATH] [extra `bakeoff run` arguments]
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/setup_env.sh
example="${1:-examples/rmsnorm_torch}"
shift || true
export PREFECT_SERVER_ANALYTICS_ENABLED=false
exec .venv/bin/bakeoff run "$example" --mode bakeoff "$@"
