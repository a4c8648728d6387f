#!/usr/bin/env bash
# Installs mtpsim and everything its test suite needs into the current Python.
# torch==2.13.0 is the CPU build (a looser pin pulls a multi-GB CUDA build).
# On a fresh Python: ~0.9 GB of downloads, 3.7 GB of disk, 1.5-25 minutes (README, "Install").
# Each step prints one line when it starts and one with its time and the disk it added;
# pip's own lines (what it downloads and installs) show in between. MTPSIM_INSTALL_QUIET=1 hides them.
# ray==2.60.0 (the cluster tests start a local multi-node Ray cluster) comes with the test extra.
set -euo pipefail
export PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1
cd "$(dirname "$0")/.."

site="$(python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
mb() { du -sm "$site" 2>/dev/null | cut -f1; }
start_all=$SECONDS
step_no=0
step() {  # step "what" cmd...: run cmd, then report its time and size
    local what="$1"; shift
    step_no=$((step_no + 1))
    local t0=$SECONDS before; before="$(mb)"
    echo "[${step_no}/5] ${what} ..."
    "$@"
    echo "[${step_no}/5] ${what}: done in $((SECONDS - t0)) s, +$(($(mb) - before)) MB in ${site}"
}
PIP_NOISE="^(Looking in|Requirement already satisfied|WARNING: Location|  (Using cached|Attempting|Found existing|Uninstalling|Successfully uninstalled)|vllm 0\.33\.0 requires|ERROR: pip's dependency resolver)"
# pip, showing only the lines that say what it fetches and installs (not "already satisfied").
pipi() {
    if [[ "${MTPSIM_INSTALL_QUIET:-0}" == 1 ]]; then
        python -m pip install -q "$@"
        return
    fi
    python -m pip install --progress-bar off "$@" 2>&1 \
        | { grep --line-buffered -v -E "$PIP_NOISE" || true; } | sed -u 's/^/    /'
    return "${PIPESTATUS[0]}"
}

step "torch 2.13.0, CPU build (~190 MB download)" pipi torch==2.13.0
step "mtpsim and its test extra (fastapi, aiohttp, matplotlib, ruff, pytest-xdist, ...)" pipi -e '.[test]'

# vLLM 0.33.0, the light route (the plugin's contract tests run against the real package):
# the wheel without its dependencies, then its own non-extra requirements minus torch and the
# GPU-only packages; a constraints file keeps the CPU torch. pip warns about the torch pin.
if python -c 'import importlib.metadata as m, sys; sys.exit(m.version("vllm") != "0.33.0")' 2>/dev/null; then
    step "vLLM 0.33.0 wheel (already installed)" true
else
    step "vLLM 0.33.0 wheel, without its dependencies (~340 MB download)" pipi --no-deps vllm==0.33.0
fi
constraints="$(mktemp)"; requirements="$(mktemp)"
trap 'rm -f "$constraints" "$requirements"' EXIT
echo "torch==2.13.0" > "$constraints"
pipi -q packaging
python scripts/vllm_light_requirements.py > "$requirements"
# pip exits 1 only over the torch pin it cannot see through the constraints file: the import
# check below is the real test.
step "vLLM's own requirements minus torch and GPU-only packages ($(wc -l < "$requirements") packages)" \
    pipi -r "$requirements" -c "$constraints" || true
# vLLM logs that its CUDA extension vllm._C is missing; only a failed import is worth showing.
check='import vllm.plugins, vllm.config, vllm.v1.worker.gpu.spec_decode.mtp.speculator'
import_check() { python -c "$check" 2>/dev/null || python -c "$check"; }
step "import check of vLLM's plugin and MTP speculator modules" import_check
echo "installed in $((SECONDS - start_all)) s; ${site} now holds $(mb) MB"
