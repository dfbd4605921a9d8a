#!/usr/bin/env bash
# llama.cpp's llama-server, a real inference engine that runs on CPUs, for tests and experiments.
# Its sources come from the node-llama-cpp npm package (a git bundle of llama.cpp), are built once
# per machine into a cache outside the checkout, and serve a tiny random-weight model made here.
#
# Usage: scripts/llama-server.sh build           fetch and build (once), print the bin directory
#        scripts/llama-server.sh model           make the tiny model (once), print its path
#        scripts/llama-server.sh check           make the model twice more, fail unless all 3 are equal
#        scripts/llama-server.sh start [-np N] [-c N] [-t N] [--log FILE] [--pidfile FILE]
#            start on a free 127.0.0.1 port, wait until GET /health is ok, print the base URL;
#            defaults: -np 32 -c 16384 (512 tokens per slot), -t $(nproc) threads, --metrics,
#            continuous batching. -t 1 on a loaded machine: 2 threads wait for each other at every
#            step, and one descheduled stalls both (3-8 times slower on 2 shared cores, issue 43)
#        scripts/llama-server.sh stop PIDFILE    stop a server started with --pidfile
#
# Cache: ${RETRACE_CACHE:-/var/cache/retrace}/llama.cpp/<commit>-<arch>-portable (falls back to
# ~/.cache/retrace when /var/cache is not writable). Built with GGML_NATIVE=OFF, so the build
# does not depend on this CPU's features, at nice 19 (LLAMA_NICE), and through ccache when
# installed. The flags are fixed here: when changing them, change the cache directory's name too.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)

NPM_PACKAGE=node-llama-cpp@3.22.1
COMMIT=de3ff81          # HEAD of the bundle in that package
PYTHON=/usr/bin/python3 # Debian's, which sees python3-numpy

die() { echo "llama-server.sh: $*" >&2; exit 1; }

cache_root() {
  local root=${RETRACE_CACHE:-/var/cache/retrace}
  if ! mkdir -p "$root" 2>/dev/null || [[ ! -w "$root" ]]; then
    root=${XDG_CACHE_HOME:-$HOME/.cache}/retrace
    mkdir -p "$root"
  fi
  echo "$root/llama.cpp"
}
CACHE=$(cache_root)
HERE="$CACHE/$COMMIT-$(uname -m)-portable"
SRC="$HERE/src"
BIN="$HERE/build/bin"
# The model is keyed on its generator: a changed generator makes a new file.
MODEL="$HERE/tiny-llama-$(sha256sum "$ROOT/scripts/tiny_llama_model.py" | cut -c1-12).gguf"
mkdir -p "$HERE"

# with_lock FILE CMD...: one caller at a time does the work (tests may run in parallel). The
# build holds $HERE/lock, the model $HERE/model.lock, the download $HERE/fetch.lock.
with_lock() {
  local lock=$1 fd; shift
  exec {fd}>"$lock"
  flock "$fd"
  "$@"
  exec {fd}>&-
}

fetch() { with_lock "$HERE/fetch.lock" fetch_once; }
fetch_once() {
  [[ -f "$SRC/.retrace-fetched" ]] && return
  local started=$SECONDS tmp
  echo "llama-server.sh: fetching llama.cpp $COMMIT from npm ($NPM_PACKAGE)" >&2
  tmp=$(mktemp -d "$HERE/fetch.XXXXXX")
  (cd "$tmp" && npm pack --silent "$NPM_PACKAGE" >/dev/null && tar -xzf ./*.tgz package/llama/gitRelease.bundle) \
    || die "could not download $NPM_PACKAGE from the npm registry (is it reachable? npm config get registry)"
  rm -rf "$SRC"
  git -c advice.detachedHead=false clone --quiet "$tmp/package/llama/gitRelease.bundle" "$SRC" || die "could not clone the bundle of $NPM_PACKAGE"
  rm -rf "$tmp"
  local head
  head=$(git -C "$SRC" rev-parse HEAD)
  [[ "$head" == "$COMMIT"* ]] || die "$NPM_PACKAGE bundles llama.cpp $head, expected $COMMIT"
  touch "$SRC/.retrace-fetched"
  echo "llama-server.sh: fetched in $((SECONDS - started)) s" >&2
}

build() {
  [[ -f "$HERE/build/.retrace-built" ]] && return
  fetch
  local started=$SECONDS flags=(
    -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF)
  if command -v ccache >/dev/null; then
    export CCACHE_BASEDIR="$SRC" CCACHE_NOHASHDIR=1 CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-5G}
    flags+=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  fi
  echo "llama-server.sh: building llama-server (12-17 minutes on 2 cores, once per machine) in $HERE/build" >&2
  cmake -S "$SRC" -B "$HERE/build" "${flags[@]}" >"$HERE/configure.log" 2>&1 \
    || { tail -30 "$HERE/configure.log" >&2; die "configuring llama.cpp failed (log: $HERE/configure.log)"; }
  nice -n "${LLAMA_NICE:-19}" cmake --build "$HERE/build" --target llama-server -j"$(nproc)" >"$HERE/build.log" 2>&1 \
    || { tail -30 "$HERE/build.log" >&2; die "building llama-server failed (log: $HERE/build.log)"; }
  touch "$HERE/build/.retrace-built"
  echo "llama-server.sh: built in $((SECONDS - started)) s" >&2
}

model() {
  [[ -f "$MODEL" ]] && return
  fetch
  local started=$SECONDS
  "$PYTHON" "$ROOT/scripts/tiny_llama_model.py" --gguf-py "$SRC/gguf-py" \
    --vocab "$SRC/models/ggml-vocab-llama-spm.gguf" --out "$MODEL.tmp" >&2 \
    || die "making the tiny model failed (needs python3-numpy: scripts/deps.sh)"
  mv "$MODEL.tmp" "$MODEL"
  echo "llama-server.sh: model made in $((SECONDS - started)) s" >&2
}

check() {
  local tmp
  tmp=$(mktemp -d)
  "$PYTHON" "$ROOT/scripts/tiny_llama_model.py" --gguf-py "$SRC/gguf-py" --self-check \
    --vocab "$SRC/models/ggml-vocab-llama-spm.gguf" --out "$tmp/tiny.gguf" >/dev/null \
    || { rm -rf "$tmp"; die "the model generator's self-check failed"; }
  cmp -s "$tmp/tiny.gguf" "$MODEL" || { rm -rf "$tmp"; die "a fresh model differs from the cached $MODEL"; }
  rm -rf "$tmp"
  echo "llama-server.sh: the model is the same file every time: $(sha256sum "$MODEL")" >&2
}

free_port() {
  "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start() {
  local slots=32 context=16384 threads log=/dev/null pidfile=""
  threads=$(nproc)
  while (( $# )); do
    case "$1" in
      -np) slots=$2; shift 2 ;;
      -c) context=$2; shift 2 ;;
      -t) threads=$2; shift 2 ;;
      --log) log=$2; shift 2 ;;
      --pidfile) pidfile=$2; shift 2 ;;
      *) die "start: unknown option '$1' (see the usage at the top of $0)" ;;
    esac
  done
  with_lock "$HERE/lock" build
  with_lock "$HERE/model.lock" model
  local port pid url i
  port=$(free_port)
  url="http://127.0.0.1:$port"
  "$BIN/llama-server" -m "$MODEL" --host 127.0.0.1 --port "$port" -np "$slots" -c "$context" \
    --cont-batching --metrics --alias tiny-random-llama -t "$threads" >"$log" 2>&1 &
  pid=$!
  [[ -z "$pidfile" ]] || echo "$pid" >"$pidfile"
  # Wait for the event: /health answers 503 while the model loads and 200 once it serves.
  for i in $(seq 1 1200); do
    if curl -sf --max-time 5 "$url/health" 2>/dev/null | grep -q '"ok"'; then echo "$url"; return; fi
    kill -0 "$pid" 2>/dev/null || { [[ "$log" == /dev/null ]] || tail -20 "$log" >&2; die "llama-server exited before it was ready"; }
    sleep 0.1
  done
  kill "$pid" 2>/dev/null || true
  die "llama-server did not report healthy within 120 s on $url (log: $log)"
}

stop() {
  local pid
  [[ -f "${1:?stop needs the pid file given to start}" ]] || return 0
  pid=$(cat "$1")
  kill -TERM "$pid" 2>/dev/null || return 0
  while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
}

case "${1:-}" in
  build) with_lock "$HERE/lock" build; echo "$BIN" ;;
  model) with_lock "$HERE/model.lock" model; echo "$MODEL" ;;
  check) with_lock "$HERE/model.lock" model; check ;;
  start) shift; start "$@" ;;
  stop) shift; stop "$@" ;;
  *) sed -n '2,/^set /{/^#/p}' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
