#!/usr/bin/env bash
# Installs mtpsim and everything its test suite needs into the current Python.
# torch==2.13.0 is the CPU build (a looser pin pulls a multi-GB CUDA build).
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q torch==2.13.0
python -m pip install -q -e '.[test]'
