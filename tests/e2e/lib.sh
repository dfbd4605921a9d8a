# Shared helpers for end-to-end tests. Source it first thing:  . "$(dirname "$0")/lib.sh"
# Provides: $RETRACE (the binary under test), $ROOT (source tree), $WORK (a scratch directory
# removed at exit), start_listening, wait_for_line, fail, check, check_eq, check_contains, json,
# import_numbered. Every
# process started with start_listening is killed at exit, so a failing test leaves nothing running.
set -euo pipefail

: "${RETRACE:?RETRACE must name the retrace binary (ctest sets it)}"
ROOT=${RETRACE_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
# The Python test upstreams share tests/e2e/loopback_http.py, also from scripts written into $WORK.
export PYTHONPATH="$ROOT/tests/e2e${PYTHONPATH:+:$PYTHONPATH}"
# Importing it must not write tests/e2e/__pycache__ into the source tree.
export PYTHONDONTWRITEBYTECODE=1
WORK=$(mktemp -d "${TMPDIR:-/tmp}/retrace-e2e.XXXXXX")
_PIDS=()
_cleanup() {
  local pid
  for pid in "${_PIDS[@]+"${_PIDS[@]}"}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${_PIDS[@]+"${_PIDS[@]}"}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap _cleanup EXIT
# A command whose failure set -e turns into the script's exit names itself, instead of the test
# ending with no message (only while errexit is on: a `set +e` stretch fails nothing).
trap '_status=$?; [[ $- != *e* ]] || echo "FAIL: ${BASH_SOURCE[0]##*/} line $LINENO: \`$BASH_COMMAND\` exited $_status" >&2' ERR

fail() { echo "FAIL: $*" >&2; exit 1; }
check() { local what=$1; shift; "$@" || fail "$what"; }
check_eq() { [[ "$1" == "$2" ]] || fail "$3: expected '$2', got '$1'"; }
check_contains() { grep -qF -- "$2" "$1" || { echo "--- $1:" >&2; head -c 4000 "$1" >&2; fail "$3: '$2' not found in $1"; }; }
# json FILE EXPRESSION: evaluates a JavaScript expression over the JSON in FILE (as `s`), with node.
json() { node -e "const s=JSON.parse(require('fs').readFileSync(process.argv[1],'utf8')); console.log($2)" "$1"; }

# import_numbered TRACE COUNT LINE [IMPORT_FLAGS...] : the trace TRACE (X.rtrace) that `retrace
# import IMPORT_FLAGS` makes of COUNT requests, line i (1 to COUNT) being LINE with every %d
# replaced by i; the lines stay beside it in X.jsonl. Fails the test, with import's message, when
# import fails.
import_numbered() {
  local trace=$1 count=$2 line=$3 i
  shift 3
  local lines=${trace%.rtrace}.jsonl
  for ((i = 1; i <= count; i++)); do printf '%s\n' "${line//%d/$i}"; done >"$lines"
  "$RETRACE" import "$lines" --out "$trace" "$@" >/dev/null 2>"$WORK/import.err" ||
    { cat "$WORK/import.err" >&2; fail "import of $lines"; }
}

# start_listening NAME CMD... : runs CMD in the background, waits (up to 30 s) for the line
# "listening on http://HOST:PORT" on its stdout, then sets ${NAME}_URL and ${NAME}_PID.
# Its stdout and stderr go to $WORK/NAME.out and $WORK/NAME.err.
start_listening() {
  local name=$1; shift
  local out="$WORK/$name.out" err="$WORK/$name.err"
  "$@" >"$out" 2>"$err" &
  local pid=$!
  _PIDS+=("$pid")
  local i url=""
  for i in $(seq 1 300); do
    url=$(grep -m1 -oE 'listening on https?://[^ ]+' "$out" 2>/dev/null | sed 's/^listening on //') || true
    [[ -n "$url" ]] && break
    kill -0 "$pid" 2>/dev/null || { cat "$err" >&2; fail "$name exited before listening"; }
    sleep 0.1
  done
  [[ -n "$url" ]] || { cat "$err" >&2; fail "$name did not print 'listening on' within 30 s"; }
  printf -v "${name}_URL" '%s' "$url"
  printf -v "${name}_PID" '%s' "$pid"
}

# stop PID: SIGTERM and wait; returns the process's exit status.
stop() {
  kill -TERM "$1" 2>/dev/null || true
  local status=0
  wait "$1" || status=$?
  return $status
}

# _poll CMD... : runs CMD every 0.1 s until it succeeds (0), for up to 30 s (1): the one wait of
# wait_until and wait_until_output.
_poll() {
  local i
  for i in $(seq 1 300); do
    "$@" && return 0
    sleep 0.1
  done
  return 1
}

# wait_until WHAT CMD... : waits (up to 30 s) until CMD succeeds; fails naming WHAT otherwise.
wait_until() {
  local what=$1; shift
  _poll "$@" || fail "$what did not happen within 30 s"
}

# wait_until_output WHAT EXPECTED CMD... : waits (up to 30 s) until CMD prints EXPECTED, running CMD
# anew each time (a failing CMD counts as not yet); fails naming WHAT and CMD's last output otherwise.
# Not `wait_until WHAT test "$(CMD)" = EXPECTED`: the shell expands $(CMD) once, before the wait.
wait_until_output() {
  local what=$1 want=$2 got=""; shift 2
  _prints() { got=$("$@" 2>/dev/null) && [[ "$got" == "$want" ]]; }  # sets wait_until_output's got
  _poll _prints "$@" || fail "$what did not happen within 30 s (last output: '$got', expected '$want')"
}

# wait_for_line FILE TEXT [PID] : waits (up to 30 s) until FILE contains TEXT; fails sooner if
# process PID exits first.
wait_for_line() {
  local file=$1 text=$2 pid=${3:-} i
  for i in $(seq 1 300); do
    grep -qF -- "$text" "$file" 2>/dev/null && return 0
    [[ -z "$pid" ]] || kill -0 "$pid" 2>/dev/null || { grep -qF -- "$text" "$file" 2>/dev/null && return 0; fail "process $pid exited before '$text' appeared in $file"; }
    sleep 0.1
  done
  fail "'$text' did not appear in $file within 30 s"
}
