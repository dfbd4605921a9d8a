#!/usr/bin/env bash
# diff pairs the right requests in the two cases of issue 29 where ids name another trace's
# exchanges: (a) a proxy recording against the replay that went through that proxy (the replay's
# source ids are the imported trace's, from 1; the proxy numbers from 0), and (b) a run that was
# itself a replay against a replay of that run (source ids of the run's source against the run's
# own ids). Greedy answers from `retrace serve` are the same everywhere, so every pair is
# identical once aligned by request key, and diff says it aligned that way and why. A replay that
# rewrote every body (streaming, --set) still pairs with its source by id, and says so.
. "$(dirname "$0")/lib.sh"

COUNT=12
import_numbered "$WORK/source.rtrace" $COUNT '{"prompt":"Question %d: which way does the river run?"}' \
  --max-tokens 16

start_listening sim "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off
# Only the inference requests are recorded (not the replay's preflight and server-info reads).
start_listening proxy "$RETRACE" record --upstream "$sim_URL" --out "$WORK/proxy.rtrace" --listen 127.0.0.1:0 \
  --no-server-info --flush-every 1 --include-path /v1/chat/completions
"$RETRACE" replay "$WORK/source.rtrace" --target "$proxy_URL" -c 1 -o "$WORK/through-proxy.rtrace" \
  >/dev/null 2>"$WORK/r1.err" || { cat "$WORK/r1.err" >&2; fail "replay through the proxy"; }
stop "$proxy_PID" || fail "record did not stop cleanly"

same() {  # NAME BASELINE CANDIDATE: diff exits 0, every pair identical, aligned by request key
  local status=0
  "$RETRACE" diff "$2" "$3" >"$WORK/$1.out" 2>&1 || status=$?
  [[ $status == 0 ]] || { cat "$WORK/$1.out" >&2; fail "$1: diff exited $status, expected 0"; }
  check_contains "$WORK/$1.out" "0 of $COUNT differ from baseline" "$1: every pair identical"
  check_contains "$WORK/$1.out" "identical $COUNT," "$1: $COUNT identical pairs"
  check_contains "$WORK/$1.out" "aligned by request key + occurrence ($COUNT pairs)" "$1: aligned by request key"
  check_contains "$WORK/$1.out" "aligned by request key instead of" "$1: diff says why it left the ids"
}

# (a) the proxy's recording against the replay through it, both ways round.
same proxy-vs-replay "$WORK/proxy.rtrace" "$WORK/through-proxy.rtrace"
same replay-vs-proxy "$WORK/through-proxy.rtrace" "$WORK/proxy.rtrace"
"$RETRACE" diff --json "$WORK/proxy.rtrace" "$WORK/through-proxy.rtrace" >"$WORK/a.json"
check_eq "$(jq -r '.runs[0].pairs_with_same_key' "$WORK/a.json")" "$COUNT" "(a) --json: every pair carries the same key"
check_eq "$(jq -r '.runs[0].alignment_note | startswith("aligned by request key instead of")' "$WORK/a.json")" true \
  "(a) --json: the alignment note"

# (b) the run (a replay) against a replay of it.
"$RETRACE" replay "$WORK/through-proxy.rtrace" --target "$sim_URL" -c 1 -o "$WORK/replay-of-run.rtrace" \
  >/dev/null 2>"$WORK/r2.err" || { cat "$WORK/r2.err" >&2; fail "replay of the run"; }
same run-vs-its-replay "$WORK/through-proxy.rtrace" "$WORK/replay-of-run.rtrace"

# A replay that rewrote every body (stream_options added, --set) keeps pairing with its source by id.
status=0
"$RETRACE" diff "$WORK/source.rtrace" "$WORK/through-proxy.rtrace" >"$WORK/source.out" 2>&1 || status=$?
check_contains "$WORK/source.out" "aligned by candidate source id <-> baseline id" "a replay pairs with its source by id"
check_contains "$WORK/source.out" "kept: $COUNT of $COUNT pairs carry different request keys" "and says the bodies were rewritten"
echo "diff_alignment: ok"
