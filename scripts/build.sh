#!/usr/bin/env bash
# Configures and builds one flavour of retrace: `release` (default) or `asan` (ASan + UBSan).
# Usage: scripts/build.sh [release|asan]   -> binary at build/<flavour>/retrace
set -euo pipefail
cd "$(dirname "$0")/.."
flavour=${1:-release}
case "$flavour" in
  release) flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo) ;;
  asan)    flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DRETRACE_SANITIZE=ON) ;;
  *) echo "usage: scripts/build.sh [release|asan]" >&2; exit 2 ;;
esac
cmake -S . -B "build/$flavour" "${flags[@]}" >/dev/null
cmake --build "build/$flavour" -j"$(nproc)"
