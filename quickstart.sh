#!/usr/bin/env bash
# Set up .venv (keeping any torch build already installed) and run a bake-off on a shipped example.
# Usage: ./quickstart.sh [KERNEL_PATH] [extra `bakeoff run` arguments]
# The default example, examples/residual_norm_torch, is an unfused residual add + LayerNorm +
# SiLU chain that torch.compile fuses and beats several times over, on a CPU as well.
# examples/rmsnorm_torch (a single RMSNorm) is won by less, and not on a busy machine.
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/setup_env.sh
example="${1:-examples/residual_norm_torch}"
shift || true
if ! command -v g++ >/dev/null && ! command -v clang++ >/dev/null; then
  echo "quickstart: no C++ compiler, so torch.compile cannot run on the CPU and nothing will" \
    "beat the baseline; install one first (Debian: apt-get install g++)" >&2
fi
export PREFECT_SERVER_ANALYTICS_ENABLED=false
exec .venv/bin/bakeoff run "$example" --mode bakeoff "$@"
