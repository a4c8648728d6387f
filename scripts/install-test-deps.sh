#!/usr/bin/env bash
# Installs mtpsim and everything its test suite needs into the current Python.
# torch==2.13.0 is the CPU build (a looser pin pulls a multi-GB CUDA build).
set -euo pipefail
export PIP_ROOT_USER_ACTION=ignore
cd "$(dirname "$0")/.."
python -m pip install -q torch==2.13.0
python -m pip install -q -e '.[test]'

# vLLM 0.33.0, the light route (the plugin's contract tests run against the real package):
# the wheel without its dependencies, then its own non-extra requirements minus torch and the
# GPU-only packages; a constraints file keeps the CPU torch. pip warns about the torch pin.
if ! python -c 'import importlib.metadata as m, sys; sys.exit(m.version("vllm") != "0.33.0")' \
    2>/dev/null; then
    python -m pip install -q --no-deps vllm==0.33.0
fi
python -m pip install -q packaging
constraints="$(mktemp)"; requirements="$(mktemp)"
trap 'rm -f "$constraints" "$requirements"' EXIT
echo "torch==2.13.0" > "$constraints"
python scripts/vllm_light_requirements.py > "$requirements"
python -m pip install -q -r "$requirements" -c "$constraints" 2>&1 \
    | grep -v -E "^(WARNING: Location|vllm 0\.33\.0 requires|ERROR: pip's dependency resolver)" \
    || true
# vLLM logs that its CUDA extension vllm._C is missing; only a failed import is worth showing.
check='import vllm.plugins, vllm.config, vllm.v1.worker.gpu.spec_decode.mtp.speculator'
python -c "$check" 2>/dev/null || python -c "$check"
