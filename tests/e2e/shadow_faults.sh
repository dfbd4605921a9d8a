# retrace shadow never lets a mirror touch a client's answer: with a candidate that is down, one
# that fails every stream mid-way, one that closes every connection mid-response (a real serve
# behind shadow_cut_front.py, which resets each connection after 16 bytes of body), and one much slower than the primary behind a queue of one,
# the client's answers equal a direct replay's and the mirror's losses are counted (errors,
# drops, the full queue's apart from those at stop). An identical candidate puts 0 inside the excess interval and passes the gate; --max-pairs
# stops the run. Bad input: a candidate on the primary's URL is refused, and with the primary
# down the client gets record's 502 and no mirror is sent, nor for a body over --max-body (413).
. "$(dirname "$0")/lib.sh"
GOLD="$ROOT/traces/gold-intents.rtrace"
SERVE=(serve --listen 127.0.0.1:0 --latency-model off --prefix-cache off)

start_listening primary "$RETRACE" "${SERVE[@]}"
start_listening same "$RETRACE" "${SERVE[@]}"
start_listening midstream "$RETRACE" "${SERVE[@]}" --fail-mid-stream 1 --fail-after-tokens 2
start_listening slow "$RETRACE" serve --listen 127.0.0.1:0 --prefix-cache off --decode-step-ms 40
start_listening cut python3 "$ROOT/tests/e2e/shadow_cut_front.py" "${same_URL##*:}" 16
# A port nothing listens on: a server started and stopped.
start_listening gone "$RETRACE" "${SERVE[@]}"
stop "$gone_PID" || true

"$RETRACE" replay "$GOLD" --target "$primary_URL" -c 4 --out "$WORK/direct.rtrace" >/dev/null 2>"$WORK/direct.err" ||
  { cat "$WORK/direct.err" >&2; fail "direct replay"; }

# run NAME CANDIDATE_URL [shadow flags...]: shadow in front of the primary, the gold trace replayed
# through it, the client's answers compared with the direct replay's, shadow stopped.
run() {
  local name=$1 candidate=$2; shift 2
  start_listening "sh_$name" "$RETRACE" shadow --primary "$primary_URL" --candidate "$candidate" \
    --out "$WORK/$name" --listen 127.0.0.1:0 --report-every 50ms --drain-timeout 200ms "$@"
  local url_var="sh_${name}_URL" pid_var="sh_${name}_PID"
  "$RETRACE" replay "$GOLD" --target "${!url_var}" -c 4 --out "$WORK/$name.rtrace" >/dev/null 2>"$WORK/$name.replay.err" ||
    { cat "$WORK/$name.replay.err" >&2; fail "$name: replay through shadow"; }
  "$RETRACE" diff "$WORK/direct.rtrace" "$WORK/$name.rtrace" >"$WORK/$name.diff" ||
    { cat "$WORK/$name.diff" >&2; fail "$name: the client's answers differ from a direct replay's"; }
  [[ "${NO_STOP:-}" == 1 ]] || { stop "${!pid_var}" || true; }
}
leg() { json "$WORK/$1/summary.json" "s.legs.candidate.$2"; }

run down "$gone_URL"
check_eq "$(leg down errors)" 20 "a candidate that is down: 20 errors counted"
check_eq "$(leg down pairs)" 0 "a candidate that is down: nothing compared"
check_contains "$WORK/sh_down.err" "20 error(s)" "the final lines name the errors"

run midstream "$midstream_URL"
check_eq "$(leg midstream errors)" 20 "a candidate failing mid-stream: 20 errors counted"

run cut "$cut_URL"
check_eq "$(leg cut errors)" 20 "a candidate closing every connection mid-response: 20 errors counted"
check_eq "$(leg cut pairs)" 0 "a candidate closing every connection mid-response: nothing compared"
check_contains "$WORK/cut.err" "cut after 16 body bytes" "the front really cut connections"

# Each request takes the slow candidate seconds: of the 20 sent at once, one is in flight, one
# waits, and the queue of one drops the rest while shadow runs (not only when it stops).
NO_STOP=1 run slow "$slow_URL" --mirror-queue 1 --mirror-concurrency 1
slow_dropped_18() { test "$(json "$WORK/slow/summary.json" 's.legs.candidate.dropped' 2>/dev/null || echo 0)" -ge 18; }
wait_until "18 requests dropped by the full queue while shadow runs" slow_dropped_18
stop "$sh_slow_PID" || true
dropped=$(leg slow dropped)
check "a slow candidate behind a queue of one drops requests ($dropped)" test "$dropped" -gt 0
check_eq "$(( $(leg slow pairs) + $(leg slow errors) + dropped ))" 20 "every request compared, failed or dropped"
check_contains "$WORK/sh_slow.err" "$dropped dropped" "the final lines name the drops"

# Drops at the full queue and drops at stop, counted apart: a candidate that never answers (the
# fault upstream's stall) holds one request in flight and five queued (--mirror-queue 5), so of
# ten requests four are dropped by the full queue while shadow runs; at stop the five still queued
# when --drain-timeout runs out are dropped at stop, and the one in flight is cut.
start_listening stall python3 "$ROOT/tests/e2e/record_faults_upstream.py"
start_listening sh_stall "$RETRACE" shadow --primary "$primary_URL" --candidate "$stall_URL" \
  --out "$WORK/stall" --listen 127.0.0.1:0 --admin-listen 127.0.0.1:0 --report-every 50ms \
  --drain-timeout 200ms --mirror-queue 5 --mirror-concurrency 1
stall_admin=$(grep -m1 -oE 'admin on http://[^ ]+' "$WORK/sh_stall.out" | sed 's/^admin on //')
ask() { curl -sf -o /dev/null -H 'Content-Type: application/json' \
  -d '{"model":"retrace-sim","prompt":"fault:stall","max_tokens":4}' "$sh_stall_URL/v1/completions" || fail "a client request through shadow"; }
ask
wait_for_line "$WORK/stall.err" "request POST /v1/completions" "$stall_PID"
for i in $(seq 2 10); do ask; done
metrics_hold() { curl -sf "$stall_admin/metrics" >"$WORK/stall.metrics" && grep -qF "$1" "$WORK/stall.metrics"; }
wait_until "4 drops at the full queue on /metrics" \
  metrics_hold 'retrace_shadow_dropped_total{leg="candidate",reason="queue_full"} 4'
check_contains "$WORK/stall.metrics" 'retrace_shadow_dropped_total{leg="candidate",reason="stopped"} 0' "no drop at stop while running"
wait_until_output "summary.json counts the full queue's drops" 4 \
  json "$WORK/stall/summary.json" 's.legs.candidate.dropped_queue_full'
check_eq "$(json "$WORK/stall/summary.json" 's.legs.candidate.dropped_at_stop')" 0 "summary.json: no drop at stop while running"
stop "$sh_stall_PID" || true
check_eq "$(leg stall dropped_queue_full)/$(leg stall dropped_at_stop)/$(leg stall dropped)" 4/5/9 \
  "after stop: 4 dropped at the full queue, 5 at stop, 9 in all"
check_contains "$WORK/sh_stall.err" "9 dropped (4 at the full queue, 5 at stop)" "the final lines name both"

# An identical candidate: 0 inside the interval, the gate passes, --max-pairs ends the run.
NO_STOP=1 run same "$same_URL" --fail-if-excess 0 --max-pairs 20
status=0
wait "$sh_same_PID" || status=$?
check_eq "$status" 0 "an identical candidate passes --fail-if-excess 0"
check_contains "$WORK/sh_same.err" "--max-pairs reached" "--max-pairs stopped the run"
check "0 is inside the excess interval" node -e "
  const s = JSON.parse(require('fs').readFileSync('$WORK/same/summary.json', 'utf8'));
  process.exit(s.excess.low <= 0 && s.excess.high >= 0 && s.legs.candidate.identical === 20 ? 0 : 1)"

# Bad input: the candidate on the primary's URL.
status=0
"$RETRACE" shadow --primary "$primary_URL" --candidate "$primary_URL/" --out "$WORK/bad" \
  --listen 127.0.0.1:0 >/dev/null 2>"$WORK/bad.err" || status=$?
check_eq "$status" 2 "a candidate equal to the primary is refused"
check_contains "$WORK/bad.err" "is the primary's URL" "the refusal says why"
check "nothing written for a refused run" test ! -e "$WORK/bad"

# The primary down: the client gets record's 502, and no mirror is sent; nor is a body over
# --max-body, which record answers 413 itself.
start_listening sh_nop "$RETRACE" shadow --primary "$gone_URL" --candidate "$same_URL" \
  --out "$WORK/nop" --listen 127.0.0.1:0 --report-every 50ms --max-body 200
code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
  -d "{\"model\":\"m\",\"prompt\":\"$(printf 'x%.0s' $(seq 300))\"}" "$sh_nop_URL/v1/completions")
check_eq "$code" 413 "a body over --max-body gets record's 413"
code=$(curl -s -o "$WORK/nop.body" -w '%{http_code}' -H 'Content-Type: application/json' \
  -d '{"model":"m","prompt":"hi","max_tokens":4}' "$sh_nop_URL/v1/completions")
check_eq "$code" 502 "the primary down: the client gets 502"
check_contains "$WORK/nop.body" "retrace record" "record's own answer"
stop "$sh_nop_PID" || true
check_eq "$(json "$WORK/nop/summary.json" 's.legs.candidate.written + s.legs.candidate.dropped')" 0 "no mirror sent"
echo "ok"
