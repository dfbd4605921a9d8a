# Helpers for the tests against a real engine, llama.cpp's llama-server (scripts/llama-server.sh).
# Source it first thing:  . "$(dirname "$0")/lib.sh"
# Everything tests/e2e/lib.sh provides, plus start_llama and check_replay_identical. Every
# llama-server started here is stopped at exit; its log is printed when the test fails.
. "$(dirname "${BASH_SOURCE[0]}")/../e2e/lib.sh"
export RETRACE_ROOT="$ROOT"
LLAMA="$ROOT/scripts/llama-server.sh"
_LLAMAS=()
_real_cleanup() {
  local status=$? name
  for name in "${_LLAMAS[@]+"${_LLAMAS[@]}"}"; do
    if (( status != 0 )) && [[ -s "$WORK/$name.log" ]]; then
      echo "--- last lines of $name's llama-server log:" >&2
      tail -15 "$WORK/$name.log" >&2
    fi
    "$LLAMA" stop "$WORK/$name.pid" || true
  done
  _cleanup
}
trap _real_cleanup EXIT

# start_llama NAME [llama-server.sh start options: -np N -c N -t N]: starts llama-server on a free loopback
# port (building it and the model first if this machine has not yet), waits until GET /health
# is ok, and sets ${NAME}_URL. Its log goes to $WORK/NAME.log.
start_llama() {
  local name=$1; shift
  _LLAMAS+=("$name")
  local url
  url=$("$LLAMA" start --pidfile "$WORK/$name.pid" --log "$WORK/$name.log" "$@") \
    || fail "could not start llama-server $name"
  printf -v "${name}_URL" '%s' "$url"
}

# check_replay_identical TRACE URL: replays TRACE against URL at concurrency 1 and fails unless
# `retrace diff` finds every output identical to the recorded one.
check_replay_identical() {
  "$RETRACE" replay "$1" --target "$2" -c 1 --out "$WORK/replay.rtrace" \
    >"$WORK/replay.out" 2>"$WORK/replay.err" || { cat "$WORK/replay.err" >&2; fail "replay of $1"; }
  local status=0
  "$RETRACE" diff "$1" "$WORK/replay.rtrace" >"$WORK/diff.out" 2>&1 || status=$?
  [[ $status == 0 ]] || { cat "$WORK/diff.out" >&2; fail "the replay differs from the recording (diff exit $status)"; }
}

