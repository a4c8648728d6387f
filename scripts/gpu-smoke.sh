#!/usr/bin/env bash
# The first hour on one GPU node (one H200, no model hub), in one bounded run:
#
#   OUT=/path/to/results bash scripts/gpu-smoke.sh
#
# 1. machine facts          -> $OUT/facts.txt
# 2. a venv                 (uv where available, else python3 -m venv; on a node that cannot
#                              reach the package index, python3 -m venv --system-site-packages,
#                              so the image's torch is used and nothing is installed)
# 3. vllm==0.33.0, cuda-toolkit[nvcc,cccl]==13.0.3 (nvcc for DeepGEMM's JIT) and this project
# 4. a toolchain probe      -> $OUT/toolchain.json: torch sees CUDA, nvcc builds an sm_90a
#                              cubin, DeepGEMM imports
# 5. mtpsim doctor --smoke --json          -> $OUT/doctor.out
# 6. the reference engine on CUDA at the first (smallest) context: lossless check and per-phase
#    timings, top-k 2048, both policies    -> $OUT/reference-<context>/reference.json
# 7. the smoke, share then fresh           -> $OUT/smoke-share/, $OUT/smoke-fresh/
#                                             (skipped at once, with why, without vLLM)
# 8. the reference engine at each further context (default 32K, 64K), each only when the time
#    it should take (the previous context's wall time x the length ratio^1.5) fits what is left
#
# Every part runs under `timeout`, bounded by what is left of GPU_SMOKE_BUDGET_S (540 s: the
# run ends inside 9 minutes); each writes $OUT/<part>.out and .err as it goes, and
# $OUT/gpu-smoke.log says what started, ended, timed out or was skipped and why, so a run cut
# short still leaves its files. Exit 0 only if every part passed. (The first lent H200, 4
# December 2026, had no network: docs/real-mode.md, "The first GPU run", is why the reference
# engine now runs before the vLLM parts and its contexts are sized to the budget.)
#
# Environment: OUT (required); GPU_SMOKE_BUDGET_S; GPU_SMOKE_VENV (default
# ${TMPDIR:-/tmp}/mtpsim-gpu-smoke-venv; an existing one is reused); GPU_SMOKE_PYTHON (the
# Python for the venv without uv, default python3); GPU_SMOKE_INSTALL (1: install; 0: use the
# venv as it is; unset: install only if GPU_SMOKE_INDEX_URL, default https://pypi.org/simple/,
# answers within a few seconds); GPU_SMOKE_CONTEXTS (reference contexts, default "8192 32768
# 65536"). Nothing here is evaluated as shell code: values are passed as single arguments.
set -u -o pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${OUT:?set OUT to the folder for the results}
BUDGET_S=${GPU_SMOKE_BUDGET_S:-540}
RESERVE_S=15  # the package list and the summary
VENV=${GPU_SMOKE_VENV:-${TMPDIR:-/tmp}/mtpsim-gpu-smoke-venv}
BASE_PYTHON=${GPU_SMOKE_PYTHON:-python3}
INDEX_URL=${GPU_SMOKE_INDEX_URL:-https://pypi.org/simple/}
read -r -a CONTEXTS <<< "${GPU_SMOKE_CONTEXTS:-8192 32768 65536}"
VPY="$VENV/bin/python"
START=$(date +%s)
mkdir -p "$OUT"
LOG="$OUT/gpu-smoke.log"
SUMMARY="$OUT/summary.txt"
: > "$LOG"
: > "$SUMMARY"
FAILED=0
export HF_HUB_OFFLINE=1  # no model hub: the smoke model is written locally, nothing is fetched
export PYTHONUNBUFFERED=1

elapsed() { echo $(( $(date +%s) - START )); }
left() { echo $(( BUDGET_S - RESERVE_S - $(elapsed) )); }
log() { printf '%s +%ss %s\n' "$(date -u +%H:%M:%S)" "$(elapsed)" "$*" | tee -a "$LOG"; }
note() { printf '%-14s %s\n' "$1" "$2" >> "$SUMMARY"; }
skip() { log "SKIP $1: $2"; note "$1" "SKIP ($2)"; }

# part NAME CAP_S NEED_S GRACE_S -- COMMAND...: run COMMAND bounded by min(CAP_S, time left -
# GRACE_S), then SIGTERM and GRACE_S to stop (run-real stops its vLLM server in that time:
# smoke-h200.toml's stop grace is 45 s); skipped when less than NEED_S would be left.
# stdout -> $OUT/NAME.out, stderr -> $OUT/NAME.err.
part() {
    local name=$1 cap=$2 need=$3 grace=$4 rc l t raw
    shift 5
    raw=$(left)
    l=$(( raw - grace ))
    if (( l < need )); then
        skip "$name" "$(( raw > 0 ? raw : 0 ))s left of the ${BUDGET_S}s budget, it needs ${need}s plus a ${grace}s stop grace"
        FAILED=1
        return 3
    fi
    t=$(( cap < l ? cap : l ))
    log "START $name (at most ${t}s): $*"
    timeout --kill-after="$grace" "$t" "$@" > "$OUT/$name.out" 2> "$OUT/$name.err"
    rc=$?
    if (( rc == 124 || rc == 137 )); then
        log "TIMEOUT $name after ${t}s (what it wrote: $name.out, $name.err)"
        note "$name" "TIMEOUT after ${t}s"
        FAILED=1
    elif (( rc == 0 )); then
        log "OK $name"
        note "$name" "OK"
    else
        log "FAIL $name: exit $rc (see $name.out, $name.err)"
        note "$name" "FAIL (exit $rc)"
        FAILED=1
    fi
    return "$rc"
}

facts() {
    local c
    date -u
    uname -a
    echo "cores: $(nproc)"
    free -g 2>&1
    df -h "$OUT" "$(dirname "$VENV")" 2>&1
    for c in nvidia-smi uv gcc g++ nvcc "$BASE_PYTHON"; do
        printf '%s: %s\n' "$c" "$(command -v "$c" || echo 'not found')"
    done
    timeout 20 nvidia-smi 2>&1
    timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap \
        --format=csv 2>&1
    timeout 10 gcc --version 2>&1 | head -1
    timeout 10 "$BASE_PYTHON" --version 2>&1
}

# The toolchain probe (fixed code, saved as $OUT/toolchain-probe.py; OUT comes in as an argument): torch and CUDA, an sm_90a
# cubin from nvcc as DeepGEMM's JIT would call it, DeepGEMM's import. Exit 0 iff torch sees CUDA.
read -r -d '' PROBE <<'PY'
import json, os, pathlib, subprocess, sys, tempfile
out = pathlib.Path(sys.argv[1])
facts = {}
try:
    import torch
    facts["torch"] = torch.__version__
    facts["torch_cuda"] = torch.version.cuda
    facts["cuda_available"] = bool(torch.cuda.is_available())
    if facts["cuda_available"]:
        p = torch.cuda.get_device_properties(0)
        facts["gpu"] = {"name": p.name, "capability": [p.major, p.minor],
                        "memory_gib": round(p.total_memory / 2**30, 1)}
except Exception as e:
    facts["torch_error"] = f"{type(e).__name__}: {e}"
    facts["cuda_available"] = False
home = os.environ.get("CUDA_HOME", "")
nvcc = os.path.join(home, "bin", "nvcc") if home else "nvcc"
with tempfile.TemporaryDirectory() as d:
    src = pathlib.Path(d, "probe.cu")
    src.write_text("extern \"C\" __global__ void probe(float *x) { x[threadIdx.x] += 1.0f; }\n")
    try:
        r = subprocess.run([nvcc, "-arch=sm_90a", "-cubin", "-o", str(pathlib.Path(d, "probe.cubin")),
                            str(src)], capture_output=True, text=True, timeout=120)
        ok = r.returncode == 0 and pathlib.Path(d, "probe.cubin").stat().st_size > 0
        facts["nvcc_sm90a_cubin"] = {"ok": ok, "nvcc": nvcc, "output": (r.stdout + r.stderr)[-2000:]}
    except Exception as e:
        facts["nvcc_sm90a_cubin"] = {"ok": False, "nvcc": nvcc, "output": f"{type(e).__name__}: {e}"}
for name in ("deep_gemm", "vllm.third_party.deep_gemm"):
    try:
        __import__(name)
        facts["deepgemm"] = {"ok": True, "module": name}
        break
    except Exception as e:
        facts.setdefault("deepgemm_errors", []).append(f"{name}: {type(e).__name__}: {e}")
else:
    facts["deepgemm"] = {"ok": False}
(out / "toolchain.json").write_text(json.dumps(facts, indent=2))
print(json.dumps(facts))
sys.exit(0 if facts["cuda_available"] else 1)
PY

log "gpu-smoke: budget ${BUDGET_S}s, results in $OUT, venv $VENV"

# 1. machine facts
facts > "$OUT/facts.txt" 2>&1
log "facts written: facts.txt"
note facts "OK"

# 2. venv, 3. install
INSTALL=${GPU_SMOKE_INSTALL:-auto}
if [[ "$INSTALL" == auto ]]; then
    # the index URL goes in as an argument, never into the code
    if timeout 10 "$BASE_PYTHON" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=6)' \
            "$INDEX_URL" > /dev/null 2>&1; then
        INSTALL=1
    else
        INSTALL=offline
        log "no answer from $INDEX_URL: an offline node, nothing will be installed"
    fi
fi
if [[ -x "$VPY" ]]; then
    log "venv $VENV exists: reused"
    note venv "OK (reused)"
elif [[ "$INSTALL" == offline ]]; then
    # the image's own packages (its torch) seen from the venv; this checkout is put on PYTHONPATH
    part venv 120 10 5 -- "$BASE_PYTHON" -m venv --system-site-packages "$VENV"
elif command -v uv > /dev/null; then
    # uv may have no Python 3.12 to offer offline: then the node's own Python makes the venv.
    part venv 120 10 5 -- uv venv --python 3.12 "$VENV" \
        || { [[ -x "$VPY" ]] || part venv-python 120 10 5 -- "$BASE_PYTHON" -m venv "$VENV"; }
else
    part venv 120 10 5 -- "$BASE_PYTHON" -m venv "$VENV"
fi
PACKAGES=("vllm==0.33.0" "cuda-toolkit[nvcc,cccl]==13.0.3" -e "$REPO")
if [[ ! -x "$VPY" ]]; then
    skip install "no venv Python at $VPY"
    FAILED=1
elif [[ "$INSTALL" == 0 || "$INSTALL" == offline ]]; then
    if [[ "$INSTALL" == 0 ]]; then
        skip install "GPU_SMOKE_INSTALL=0: the venv is used as it is"
    else
        skip install "offline: no answer from $INDEX_URL; the venv is used as it is"
    fi
    export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"  # this checkout's mtpsim, not installed
elif command -v uv > /dev/null; then
    part install 330 60 5 -- uv pip install --python "$VPY" "${PACKAGES[@]}"
else
    part install 330 60 5 -- "$VPY" -m pip install "${PACKAGES[@]}"
fi

# nvcc from the cuda-toolkit wheel, where DeepGEMM's JIT finds it: through CUDA_HOME.
NVCC=$(find "$VENV" -path '*/bin/nvcc' -type f 2> /dev/null | head -n 1)
if [[ -n "$NVCC" ]]; then
    CUDA_HOME=$(dirname "$(dirname "$NVCC")")
    export CUDA_HOME
    export PATH="$CUDA_HOME/bin:$PATH"
    log "CUDA_HOME=$CUDA_HOME (the venv's nvcc)"
else
    log "no nvcc in the venv; CUDA_HOME stays ${CUDA_HOME:-unset} (doctor says where it looked)"
fi

# 4. toolchain probe
CUDA_OK=0
if [[ -x "$VPY" ]]; then
    printf '%s\n' "$PROBE" > "$OUT/toolchain-probe.py"
    part toolchain 150 20 5 -- "$VPY" "$OUT/toolchain-probe.py" "$OUT" && CUDA_OK=1
else
    skip toolchain "no venv Python"
fi

# 5. doctor
if [[ -x "$VPY" ]]; then
    part doctor 90 10 5 -- "$VPY" -m mtpsim doctor --smoke --json
else
    skip doctor "no venv Python"
fi

# 6. the reference engine on CUDA at the first context, 8. at the others as the budget allows
REF_PREV_CTX=0
REF_PREV_S=0
reference_at() {
    local ctx=$1 need=30 t0 rc
    if (( CUDA_OK == 0 )); then
        skip "reference-$ctx" "torch sees no CUDA device (toolchain probe)"
        FAILED=1
        return
    fi
    if (( REF_PREV_CTX > 0 )); then  # what this context should take, from the last one run
        need=$("$BASE_PYTHON" -c 'import sys; s, a, b = map(float, sys.argv[1:]); print(int(s * (b / a) ** 1.5) + 1)' \
            "$REF_PREV_S" "$REF_PREV_CTX" "$ctx")
    fi
    t0=$(date +%s)
    part "reference-$ctx" 600 "$need" 10 -- "$VPY" -m mtpsim.vllm_runner.smoke_reference --device cuda \
        --contexts "$ctx" --topk 2048 --out "$OUT/reference-$ctx"
    rc=$?
    if (( rc == 0 )); then
        REF_PREV_CTX=$ctx
        REF_PREV_S=$(( $(date +%s) - t0 ))
    fi
}
reference_at "${CONTEXTS[0]}"

# 7. the smoke: share first (the policy under test), then fresh
HAS_VLLM=0
if [[ -x "$VPY" ]] && "$VPY" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("vllm") is None)' \
        > /dev/null 2>&1; then
    HAS_VLLM=1
fi
for policy in share fresh; do
    if (( CUDA_OK == 0 )); then
        skip "smoke-$policy" "torch sees no CUDA device (toolchain probe), so vLLM cannot serve"
        FAILED=1
        continue
    fi
    if (( HAS_VLLM == 0 )); then
        skip "smoke-$policy" "vLLM is not installed in $VENV (install it first on an offline node)"
        FAILED=1
        continue
    fi
    part "smoke-$policy" 240 90 50 -- "$VPY" -m mtpsim run-real "$REPO/experiments/smoke-h200.toml" \
        --engine vllm --smoke --set "policies=[\"$policy\"]" --out "$OUT/smoke-$policy"
done

for ctx in "${CONTEXTS[@]:1}"; do
    reference_at "$ctx"
done

if [[ -x "$VPY" ]] && command -v uv > /dev/null; then
    timeout 10 uv pip freeze --python "$VPY" > "$OUT/packages.txt" 2>&1
elif [[ -x "$VPY" ]]; then
    timeout 10 "$VPY" -m pip freeze > "$OUT/packages.txt" 2>&1
fi
log "done in $(elapsed)s of ${BUDGET_S}s; summary:"
tee -a "$LOG" < "$SUMMARY"
exit "$FAILED"
