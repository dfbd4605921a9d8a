# A recording of a replay is its traffic only: replay (with --warmup) through `retrace record` in
# front of `retrace serve`; replay's preflight probes, /metrics scrapes and warm-up requests carry
# X-Retrace-Probe and are forwarded but kept out of the recording, so `retrace diff` of the
# recording against the replay's own run is identical (exit 0). A recording made the old way, its
# probes unmarked (sent here by curl), still diffs identical: diff sets its GET exchanges without
# output aside and says how many.
. "$(dirname "$0")/lib.sh"

start_listening serve "$RETRACE" serve --listen 127.0.0.1:0
start_listening proxy "$RETRACE" record --upstream "$serve_URL" --out "$WORK/recorded.rtrace" \
  --listen 127.0.0.1:0 --no-server-info
"$RETRACE" replay "$ROOT/traces/gold-intents.rtrace" --target "$proxy_URL" -c 4 --warmup 3 \
  --out "$WORK/run.rtrace" >/dev/null 2>"$WORK/replay.err" || { cat "$WORK/replay.err" >&2; fail "replay through record"; }
stop "$proxy_PID" || { cat "$WORK/proxy.err" >&2; fail "record did not exit 0"; }
count=$("$RETRACE" export "$WORK/run.rtrace" | grep -c '^{"exchange"' || true)
check_contains "$WORK/proxy.err" "recorded $count exchange(s)" "record kept exactly the replay's $count requests"
check_contains "$WORK/proxy.err" "X-Retrace-Probe" "the summary counts the probes kept out"

status=0
"$RETRACE" diff "$WORK/recorded.rtrace" "$WORK/run.rtrace" >"$WORK/diff.out" 2>&1 || status=$?
[[ $status == 0 ]] || { cat "$WORK/diff.out" >&2; fail "diff of the recording against the run exited $status, expected 0"; }
check_contains "$WORK/diff.out" "0 of $count differ" "every exchange identical"
if grep -q "set aside" "$WORK/diff.out"; then fail "nothing should be set aside in a new recording"; fi

# The old way: the same traffic with unmarked probes around it (what record kept before).
start_listening old "$RETRACE" record --upstream "$serve_URL" --out "$WORK/old.rtrace" \
  --listen 127.0.0.1:0 --no-server-info
for path in /v1/models /version /props /metrics; do curl -s -o /dev/null "$old_URL$path"; done
"$RETRACE" replay "$ROOT/traces/gold-intents.rtrace" --target "$old_URL" -c 4 \
  --out "$WORK/run2.rtrace" >/dev/null 2>"$WORK/replay2.err" || { cat "$WORK/replay2.err" >&2; fail "second replay"; }
curl -s -o /dev/null "$old_URL/metrics"
stop "$old_PID" || fail "second record did not exit 0"
status=0
"$RETRACE" diff "$WORK/old.rtrace" "$WORK/run2.rtrace" >"$WORK/old.out" 2>&1 || status=$?
[[ $status == 0 ]] || { cat "$WORK/old.out" >&2; fail "diff of an old-style recording exited $status, expected 0"; }
check_contains "$WORK/old.out" "5 exchange(s) set aside" "diff says how many probes it set aside"
check_contains "$WORK/old.out" "0 of $count differ" "the traffic itself identical"
echo "PASS record_replay_probes"
