#!/usr/bin/env bash
# --requests 4000000000 (issue 46 item 9): a streamed replay (no sessions, recorded timing or time
# window) reads its requests as it sends them, so it runs (here cut by --duration) in the memory
# of the requests it finished; before, it reserved 64 bytes of figures for each of the 4e9 asked
# (std::bad_alloc). A run that lays its requests out first (--sessions, a time window, sweep)
# refuses a count past replay::kMaxLaidOutRequests with the figure and what to do instead, in
# bounded memory (before: std::bad_alloc materialising 4e9 indexes); --warmup likewise. -c above
# replay::kMaxInFlight is refused before any traffic (before: -c 100000000 took 3.8 GB and threw).
. "$(dirname "$0")/lib.sh"

start_listening SIM "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off
"$RETRACE" import "$ROOT/traces/gold-intents.jsonl" --out "$WORK/in.rtrace" 2>/dev/null
huge=4000000000
sanitized=${RETRACE_SANITIZE:-OFF}
# KiB: a regression fails on its own allocation, not on the machine (ASan reserves terabytes of
# address space for its shadow, so not under the sanitizers; there RSS holds the shadow too).
[[ $sanitized == ON ]] || ulimit -v $(( 4 << 20 ))

# peak RSS in MiB of CMD..., its exit status in $status, stdout in $WORK/out, stderr in $WORK/err.
run_measured() {
  status=0
  /usr/bin/time -f '%M' -o "$WORK/rss.kib" "$@" >"$WORK/out" 2>"$WORK/err" || status=$?
  rss_mib=$(( $(tail -1 "$WORK/rss.kib") / 1024 ))
}

# --- streamed: runs, and its memory does not follow the count asked for.
run_measured "$RETRACE" replay "$WORK/in.rtrace" --target "$SIM_URL" --out "$WORK/streamed.rtrace" -c 4 \
  --requests $huge --duration 1s --json
[[ $status == 0 ]] || { cat "$WORK/err" >&2; fail "the streamed replay of --requests $huge exited $status"; }
completed=$(jq -r .completed "$WORK/out")
(( completed > 0 )) || fail "the streamed replay completed no request"
check_eq "$(jq -r .header.schedule "$WORK/out")" "concurrency 4, $huge requests, no new request after 1000 ms" \
  "the run's schedule names the count asked for"
[[ $sanitized == ON ]] || (( rss_mib < 150 )) || fail "the streamed replay of --requests $huge took $rss_mib MiB"
echo "streamed: $completed requests in 1 s of --requests $huge, $rss_mib MiB peak RSS"

# --- laid out first: refused with the figure, nothing written.
refused() {  # refused WHAT TEXT CMD...
  local what=$1 text=$2; shift 2
  run_measured "$@"
  check_eq "$status" 2 "$what exits 2"
  check_contains "$WORK/err" "$text" "$what says why"
  check_contains "$WORK/err" "replay without --sessions and a time window" "$what says what to do"
  [[ $sanitized == ON ]] || (( rss_mib < 200 )) || fail "$what took $rss_mib MiB before refusing"
}
refused "replay --sessions --requests $huge" \
  "--requests $huge is above the 10000000 requests a run lays out before it starts" \
  "$RETRACE" replay "$WORK/in.rtrace" --target "$SIM_URL" --out "$WORK/sessions.rtrace" -c 4 --sessions \
  --requests $huge
[[ ! -e "$WORK/sessions.rtrace" ]] || fail "a refused replay wrote its trace"
refused "replay --window-from 0s --requests $huge" "--requests $huge is above the 10000000" \
  "$RETRACE" replay "$WORK/in.rtrace" --target "$SIM_URL" --out "$WORK/window.rtrace" -c 4 --window-from 0s \
  --requests $huge
refused "replay --sessions --warmup $huge" "--warmup $huge is above the 10000000" \
  "$RETRACE" replay "$WORK/in.rtrace" --target "$SIM_URL" --out "$WORK/warm.rtrace" -c 4 --sessions \
  --warmup $huge
refused "sweep --requests $huge" "--requests $huge is above the 10000000" \
  "$RETRACE" sweep "$WORK/in.rtrace" --target "$SIM_URL" --concurrency 1,2 --requests $huge --out "$WORK/sweep"

# --- in flight: bounded, refused before any traffic.
for command in replay sweep; do
  if [[ $command == replay ]]; then
    run_measured "$RETRACE" replay "$WORK/in.rtrace" --target http://127.0.0.1:9 --out "$WORK/c.rtrace" -c 100001
  else
    run_measured "$RETRACE" sweep "$WORK/in.rtrace" --target http://127.0.0.1:9 --concurrency 1,100001 --out "$WORK/c"
  fi
  check_eq "$status" 2 "$command -c 100001 exits 2"
  check_contains "$WORK/err" "100001 is above 100000, the most requests a closed loop keeps in flight" \
    "$command -c 100001 says the bound"
done
echo "huge request counts: ok"
