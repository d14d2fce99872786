#!/usr/bin/env bash
# One setup script for a fresh Debian 12 machine with the CUDA toolkit: installs the
# libraries tune builds against (all from Debian's packages) and configures + builds.
# Usage: scripts/setup.sh [build-dir]      (default: build)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build}

pkgs=(cmake ninja-build g++ nlohmann-json3-dev libcli11-dev libmuparser-dev libfmt-dev
      libxxhash-dev zlib1g-dev libxgboost-dev libgtest-dev libgmock-dev libbenchmark-dev python3-matplotlib python3-numpy
      python3-sklearn)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}"
fi

if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi
command -v nvcc >/dev/null 2>&1 || { echo "setup: the CUDA toolkit (nvcc, NVRTC) is required; install it and put nvcc on PATH" >&2; exit 1; }

cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" --parallel
