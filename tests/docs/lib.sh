# The guides' harness: run_guide FILE runs every ```sh block of a Markdown guide, in order, in one
# bash (a reader pastes them into one shell), in a scratch directory, against real `retrace serve`
# instances, so that a guide cannot drift from the binary. Source tests/e2e/lib.sh first.
#
# The convention (HACKING.md, "Guides and their tests"), as a guide writes it:
#   ```sh ... ```                 run; every command must succeed (bash -euo pipefail).
#   <!-- test: skip WHY -->       on the line before a block: not run here; the test prints WHY.
#   <!-- test: checked-by PATH --> not run here, PATH (a test that must name this guide's path)
#                                 runs it; the harness checks that PATH exists and names the guide.
#   <!-- test: exit N -->         the block runs in a bash of its own (exported variables only) and
#                                 must exit N: an error's example.
#   <!-- test: says TEXT -->      the block's stdout or stderr must contain TEXT (with exit N, or alone).
#   <!-- test-setup               hidden lines, run at this point as a block of their own, shown to
#   ...                           no reader: what a reader has already (their trace, a dataset
#   -->                           file); keep them short.
#   <!-- test: serve FLAGS -->    anywhere: the flags of the server at 127.0.0.1:8000 here.
# Addresses a guide may write, and what they are here:
#   127.0.0.1:8000, gpu:8000, gpu01:8000, https://api.example.com  the server (`retrace serve`)
#   127.0.0.1:8001                                                 a second `retrace serve`
# (each started only when the guide names it)
#   127.0.0.1:9000, 127.0.0.1:9090                                 free ports (record's listeners)
# The scratch directory holds links to traces/, deploy/, format/ and scripts/, and `retrace` is
# on PATH. Marks apply to the next ```sh block only. Other fences (```text, ```yaml) are not run.

# free_ports N: N ports nobody listens on at this moment, on loopback, one a line.
free_ports() {
  python3 -c 'import socket, sys
held = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in held: s.bind(("127.0.0.1", 0))
for s in held: print(s.getsockname()[1])' "$1"
}

# split_guide FILE DIR: writes DIR/NNN.sh (each runnable block, hidden setup included, addresses
# as written) and DIR/NNN.meta (its line in FILE, its marks one a line), in the guide's order.
split_guide() {
  mkdir -p "$2"
  awk -v dir="$2" '
    function emit_meta(kind) {
      n++; file = sprintf("%s/%03d", dir, n)
      printf "line %d\nkind %s\n%s", NR, kind, marks > (file ".meta"); close(file ".meta")
      marks = ""
    }
    setup { if ($0 ~ /^-->[ \t]*$/) { setup = 0; close(file ".sh"); next } print > (file ".sh"); next }
    inside { if ($0 ~ /^```[ \t]*$/) { inside = 0; close(file ".sh"); next } print > (file ".sh"); next }
    /^<!-- test-setup[ \t]*$/ { emit_meta("setup"); setup = 1; printf "" > (file ".sh"); next }
    /^<!-- test: serve / { next }
    /^<!-- test: .* -->[ \t]*$/ { mark = $0; sub(/^<!-- test: /, "", mark); sub(/ -->[ \t]*$/, "", mark)
                                   marks = marks mark "\n"; next }
    /^```sh[ \t]*$/ { emit_meta("block"); inside = 1; printf "" > (file ".sh"); next }
    /^```/ { marks = "" }
    END { if (inside || setup) { print "unclosed block at the end of the guide" > "/dev/stderr"; exit 1 } }
  ' "$1"
}

# run_guide FILE: runs FILE's blocks (its path relative to $ROOT, as HACKING.md names guides).
# Leaves the scratch directory in $GUIDE_RUN (for a test that checks what the blocks wrote) and
# the list of blocks not run, with why, in $WORK/guide.skipped. GUIDE_SERVE_FLAGS adds flags to
# the server at 127.0.0.1:8000 (after the guide's own `test: serve` ones).
run_guide() {
  local guide=$1 path="$ROOT/$1"
  [[ $guide != /* ]] || path=$guide  # a guide outside the tree (the harness's own test)
  [[ -f "$path" ]] || fail "no guide $guide"
  # Its links first: a file that moved, a heading renamed. The guides other branches add are said.
  python3 "$ROOT/tests/docs/check_links.py" "$ROOT" "$guide" $GUIDES_ARRIVING || fail "$guide has broken links"
  local blocks="$WORK/guide.blocks"
  split_guide "$path" "$blocks" || fail "$guide: a block is not closed"
  : >"$WORK/guide.skipped"
  if ! compgen -G "$blocks/*.meta" >/dev/null; then
    echo "$guide: no sh block; its links checked"
    return 0
  fi
  GUIDE_RUN="$WORK/run"
  mkdir -p "$GUIDE_RUN" "$WORK/bin"
  ln -sf "$RETRACE" "$WORK/bin/retrace"
  local linked
  for linked in traces deploy format scripts; do ln -sfn "$ROOT/$linked" "$GUIDE_RUN/$linked"; done

  # The servers run in the scratch directory, so that their flags name its files as a block does.
  local serve_flags
  serve_flags=$(sed -n 's/^<!-- test: serve \(.*\) -->[ \t]*$/\1/p' "$path" | head -n1)
  pushd "$GUIDE_RUN" >/dev/null
  local a=unused b=unused
  GUIDE_A_PID=""
  if grep -qE '127\.0\.0\.1:8000|gpu(01)?:8000|api\.example\.com' "$path"; then
    # shellcheck disable=SC2086  # the flags are words
    start_listening GUIDE_A "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off $serve_flags ${GUIDE_SERVE_FLAGS:-}
    a=${GUIDE_A_URL#http://}
  fi
  if grep -q '127\.0\.0\.1:8001' "$path"; then
    start_listening GUIDE_B "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off
    b=${GUIDE_B_URL#http://}
  fi
  popd >/dev/null
  local p9000 p9090
  { read -r p9000; read -r p9090; } < <(free_ports 2)

  # The driver: every block in one bash, each announced on stderr, checked as its marks say.
  local driver="$WORK/guide.driver.sh" meta number line kind mark expect says reason
  # (A block whose output is checked writes it to a file; the trap shows it when the block fails.)
  printf 'set -euo pipefail\ncd %q\ncurrent_out=\n' "$GUIDE_RUN" >"$driver"
  printf 'trap '"'"'[[ -z $current_out ]] || cat "$current_out" >&2'"'"' EXIT\n' >>"$driver"
  for meta in "$blocks"/*.meta; do
    [[ -e "$meta" ]] || break
    number=${meta%.meta}
    line=$(sed -n 's/^line //p' "$meta") kind=$(sed -n 's/^kind //p' "$meta")
    expect="" says=() reason=""
    while IFS= read -r mark; do
      case "$mark" in
        line\ *|kind\ *) ;;
        "skip "*) reason="${mark#skip }" ;;
        "checked-by "*)
          local by=${mark#checked-by }
          [[ -f "$ROOT/$by" ]] || fail "$guide line $line: checked-by $by, which does not exist"
          grep -qF "$guide" "$ROOT/$by" || fail "$guide line $line: checked-by $by, which never names $guide"
          reason="run by $by" ;;
        "exit "*) expect=${mark#exit } ;;
        "says "*) says+=("${mark#says }") ;;
        *) fail "$guide line $line: unknown mark '<!-- test: $mark -->' (tests/docs/lib.sh lists them)" ;;
      esac
    done <"$meta"
    if [[ -n "$reason" ]]; then
      echo "$guide line $line: skipped: $reason" | tee -a "$WORK/guide.skipped"
      continue
    fi
    sed -i -e "s#https://api\.example\.com#http://$a#g" -e "s#127\.0\.0\.1:8000#$a#g" \
      -e "s#gpu01:8000#$a#g" -e "s#gpu:8000#$a#g" -e "s#127\.0\.0\.1:8001#$b#g" \
      -e "s#127\.0\.0\.1:9000#127.0.0.1:$p9000#g" -e "s#127\.0\.0\.1:9090#127.0.0.1:$p9090#g" "$number.sh"
    printf 'echo "=== %s line %s (%s)" >&2\n' "$guide" "$line" "$kind" >>"$driver"
    if [[ -n "$expect" ]]; then
      printf 'status=0; bash -euo pipefail %q >%q 2>&1 || status=$?\n' "$number.sh" "$number.out" >>"$driver"
      printf 'cat %q >&2\n' "$number.out" >>"$driver"
      printf '[[ $status == %q ]] || { echo "FAIL: %s line %s: exit $status, the guide says %s" >&2; exit 1; }\n' \
        "$expect" "$guide" "$line" "$expect" >>"$driver"
    elif (( ${#says[@]} )); then
      printf 'current_out=%q\nsource %q >%q 2>&1\ncat %q >&2; current_out=\n' \
        "$number.out" "$number.sh" "$number.out" "$number.out" >>"$driver"
    else
      printf 'source %q\n' "$number.sh" >>"$driver"
    fi
    for mark in "${says[@]+"${says[@]}"}"; do
      printf 'grep -qF -- %q %q || { echo %q >&2; exit 1; }\n' \
        "$mark" "$number.out" "FAIL: $guide line $line: the output does not say: $mark" >>"$driver"
    done
  done
  echo 'echo "=== every block ran" >&2' >>"$driver"

  # Its own process group, so that whatever a block leaves running is stopped with it.
  PATH="$WORK/bin:$PATH" setsid bash "$driver" >"$WORK/guide.out" 2>"$WORK/guide.err" &
  local pid=$! status=0
  _GUIDE_PGID=$pid
  trap '_guide_cleanup' EXIT
  wait "$pid" || status=$?
  kill -- "-$pid" 2>/dev/null || true
  _GUIDE_PGID=""
  if (( status )); then
    tail -n 60 "$WORK/guide.err" >&2
    fail "$guide: the block after the last '===' line above failed (exit $status)"
  fi
  [[ -z "$GUIDE_A_PID" ]] || stop "$GUIDE_A_PID" || fail "retrace serve exited non-zero after $guide's blocks"
}

# Guides that parallel branches add (issue 41's shadow, 45's Python, 42's server state): linked
# already, said rather than failed while absent. Remove a name once its guide is in the tree.
GUIDES_ARRIVING=""

_GUIDE_PGID=""
_guide_cleanup() {
  [[ -z "$_GUIDE_PGID" ]] || kill -- "-$_GUIDE_PGID" 2>/dev/null || true
  _cleanup
}
