#!/usr/bin/env bash
# Packs what a GPU machine needs to run tune and the device tests from this build into .device/
# (ignored by git): the binaries, and the Debian shared libraries such a machine may lack
# (fmt, muParser, XGBoost and dmlc, their OpenMP runtime), found beside the binaries through LD_LIBRARY_PATH. tune
# and what it reads (the built-in problem folders, the report scripts) are put there by cmake
# --install (share/tune beside bin/), where tune and the test binaries find them. The golden cases and
# report/torch_baseline.py's reference modules are read from the problem folders of the work tree.
# With a bench build (-DTUNE_BUILD_BENCH=ON) it also packs tune_bench and libbenchmark, which
# tune_bench finds through its rpath $ORIGIN/../lib.
# Usage: tools/bundle_device.sh [build-dir]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build}
dest=$here/.device
rm -rf "$dest" && mkdir -p "$dest/bin" "$dest/lib"
cmake --install "$build" --prefix "$dest" >/dev/null
cp "$build"/tests/tune_*_tests "$dest/bin/"
for lib in $(ldd "$build/tuner/tune" | awk '/libfmt|libmuparser|libgomp|libxgboost|libdmlc/ {print $3}'); do cp -L "$lib" "$dest/lib/"; done
if [ -x "$build/bench/tune_bench" ]; then
  cp "$build/bench/tune_bench" "$build/bench/contact_phases" "$build/bench/sg_probes" "$dest/bin/"
  for lib in $(ldd "$build/bench/tune_bench" | awk '/libbenchmark/ {print $3}'); do cp -L "$lib" "$dest/lib/"; done
else
  echo "bundle: no $build/bench/tune_bench (configure with -DTUNE_BUILD_BENCH=ON to bundle the bench)"
fi
du -sh "$dest"
