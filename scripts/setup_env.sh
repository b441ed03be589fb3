#!/usr/bin/env bash
# Create .venv and install kernel-bakeoff with its dev tools. Idempotent.
# A torch build already importable by $PYTHON (ROCm, CUDA or CPU) is reused via
# --system-site-packages. Otherwise $TORCH_SPEC (default torch==2.13.0) is installed:
#   - on a host with an NVIDIA or AMD GPU, from pip's configured index (PyPI: the CUDA build);
#   - on a host without one, the CPU build (754 MB installed, not several GB of CUDA libraries):
#     a torch wheel already on disk (pip's find-links) if there is one, else PyTorch's CPU index.
# TORCH_INDEX_URL overrides the index torch comes from (e.g. https://download.pytorch.org/whl/rocm6.4
# or .../whl/cu130); set it empty to use pip's configured index whatever the host has.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
TORCH_SPEC="${TORCH_SPEC:-torch==2.13.0}"
CPU_INDEX="https://download.pytorch.org/whl/cpu"
stamp=.venv/.installed-$(sha256sum pyproject.toml | cut -c1-12)
if [[ -f "$stamp" ]]; then exit 0; fi
if [[ ! -x .venv/bin/python ]]; then
  if "$PYTHON" -c "import torch" 2>/dev/null; then
    "$PYTHON" -m venv --system-site-packages .venv
  else
    "$PYTHON" -m venv .venv
  fi
fi
pip=(.venv/bin/python -m pip)
# Not needed to go on: a machine that cannot reach an index keeps the pip its venv came with.
"${pip[@]}" install -q --upgrade pip 2>/dev/null ||
  echo "setup: pip could not be upgraded (no index reachable?); going on with $("${pip[@]}" --version | cut -d' ' -f1-2)" >&2
has_gpu() { command -v nvidia-smi >/dev/null 2>&1 || [[ -e /dev/kfd ]]; }
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  if [[ -n "${TORCH_INDEX_URL+set}" ]]; then
    index="$TORCH_INDEX_URL"
  elif has_gpu; then
    index=""
  elif "${pip[@]}" install -q --dry-run --no-index --no-deps "$TORCH_SPEC" >/dev/null 2>&1; then
    index=""  # a wheel on disk (find-links) serves it: no download
  else
    index="$CPU_INDEX"
  fi
  echo "setup: installing $TORCH_SPEC${index:+ from $index} into .venv" >&2
  if ! "${pip[@]}" install -q "$TORCH_SPEC" ${index:+--index-url "$index"}; then
    # pip's own last words (ResolutionImpossible, a connection refused) do not say what to do
    tried=${index:-"pip's configured index"}
    echo "setup: error: installing $TORCH_SPEC from $tried failed" \
      "(pip's reason above); either name another index, TORCH_INDEX_URL=URL (empty for pip's" \
      "own: TORCH_INDEX_URL= ./quickstart.sh), or put a torch wheel on disk and point pip's" \
      "find-links at it (PIP_FIND_LINKS=DIR)" >&2
    exit 1
  fi
fi
# torch is installed by now, so pyproject's `torch>=2.4` is satisfied as it is (no second
# download). PYTHONWARNINGS: setuptools' editable-install banner says nothing to act on.
PYTHONWARNINGS=ignore::UserWarning "${pip[@]}" install -q -e ".[dev]"
touch "$stamp"
