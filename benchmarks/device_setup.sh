# Source on a bare GPU box (torch + triton only) from the repo root, with the Python 3.12 wheels
# of pydantic, optuna, prefect and pytest carried in .whl/ (the download: benchmarks/gpu_acceptance.md).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || return 1
export PYTHONPATH="$PWD:/tmp/site" PYTHONUNBUFFERED=1 PREFECT_SERVER_ANALYTICS_ENABLED=false
unset TRITON_INTERPRET
