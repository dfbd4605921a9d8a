#!/usr/bin/env bash
# Configures and builds one flavour of retrace: `release` (default), `asan` (ASan + UBSan), or
# `fuzz` (the libFuzzer targets of fuzz/ with clang-14, ASan + UBSan; see scripts/fuzz.sh).
# Usage: scripts/build.sh [release|asan|fuzz]   -> binary at build/<flavour>/retrace
#
# Uses Ninja and ccache when they are installed (scripts/deps.sh installs both). The compiler cache
# lives outside the checkout (ccache's own default, or $CCACHE_DIR) and is keyed on paths relative
# to the checkout, so a fresh clone or a second worktree on the same machine reuses it.
set -euo pipefail
cd "$(dirname "$0")/.."
flavour=${1:-release}
case "$flavour" in
  release) flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo) ;;
  asan)    flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DRETRACE_SANITIZE=ON -DRETRACE_BENCH=OFF) ;;
  fuzz)    flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DRETRACE_FUZZ=ON
                  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14) ;;
  *) echo "usage: scripts/build.sh [release|asan|fuzz]" >&2; exit 2 ;;
esac
if [[ ! -f "build/$flavour/CMakeCache.txt" ]] && command -v ninja >/dev/null; then
  flags+=(-G Ninja)
fi
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1 CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-5G}
  flags+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B "build/$flavour" "${flags[@]}" >/dev/null
cmake --build "build/$flavour" -j"$(nproc)"
