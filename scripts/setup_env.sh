#!/usr/bin/env bash
# Create .venv and install kernel-bakeoff with its dev tools. Idempotent.
# A torch build already importable by $PYTHON (ROCm, CUDA or CPU) is reused via
# --system-site-packages; otherwise torch==2.13.0 is installed (CPU build on machines without CUDA).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
stamp=.venv/.installed-$(sha256sum pyproject.toml | cut -c1-12)
if [[ -f "$stamp" ]]; then exit 0; fi
if [[ ! -x .venv/bin/python ]]; then
  if "$PYTHON" -c "import torch" 2>/dev/null; then
    "$PYTHON" -m venv --system-site-packages .venv
  else
    "$PYTHON" -m venv .venv
  fi
fi
.venv/bin/python -m pip install -q --upgrade pip
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  .venv/bin/python -m pip install -q "torch==2.13.0"
fi
.venv/bin/python -m pip install -q -e ".[dev]"
touch "$stamp"
