#!/usr/bin/env bash
# A valid --filter that matches none of the trace's exchanges is a mistake, not an empty run:
# replay (read as it is sent, or planned with --sessions), sweep and bisect each say "--filter X
# matched none of the N exchanges" and exit 2, as for other bad input, before any request and
# without writing a run; the same filters that match send their exchanges.
. "$(dirname "$0")/lib.sh"

"$RETRACE" import "$ROOT/traces/gold-intents.jsonl" --out "$WORK/gold.rtrace" 2>/dev/null
total=$("$RETRACE" inspect "$WORK/gold.rtrace" --json | jq -r .counts.exchanges)
start_listening SERVE "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off

# refused NAME EXPECTED CMD...: CMD exits 2 and says EXPECTED on stderr; nothing reached the server.
refused() {
  local name=$1 expected=$2 status=0
  shift 2
  "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" || status=$?
  check_eq "$status" 2 "$name: exit status"
  check_contains "$WORK/$name.err" "$expected" "$name: the message"
}
served() { curl -s "$SERVE_URL/metrics" | awk '/^retrace_sim_requests_served_total/ {print $2}'; }
before=$(served)

refused replay "--filter path:/v2/* matched none of the $total exchanges" \
  "$RETRACE" replay "$WORK/gold.rtrace" --target "$SERVE_URL" -c 2 --filter 'path:/v2/*' --out "$WORK/r.rtrace"
check "replay wrote no run" test ! -e "$WORK/r.rtrace"
refused sessions "--filter session:nobody matched none of the $total exchanges" \
  "$RETRACE" replay "$WORK/gold.rtrace" --target "$SERVE_URL" -c 2 --sessions --filter 'session:nobody' --out "$WORK/s.rtrace"
refused both "--filter path:/v1/* --filter label:tier=gold matched none of the $total exchanges (an exchange must match every --filter)" \
  "$RETRACE" replay "$WORK/gold.rtrace" --target "$SERVE_URL" -c 2 --filter 'path:/v1/*' --filter 'label:tier=gold' \
  --out "$WORK/b.rtrace"
refused sweep "--filter path:/v2/* matched none of the $total exchanges" \
  "$RETRACE" sweep "$WORK/gold.rtrace" --target "$SERVE_URL" --concurrency 1,2 --filter 'path:/v2/*' --out "$WORK/sweep"
refused bisect "--filter path:/v2/* matched none of the $total exchanges" \
  "$RETRACE" bisect --over concurrency --range 1..4 --trace "$WORK/gold.rtrace" --target "$SERVE_URL" --filter 'path:/v2/*' --out "$WORK/bisect"
check_eq "$(served)" "$before" "requests served for filters that match nothing"

# The filter that matches sends what it matched.
"$RETRACE" replay "$WORK/gold.rtrace" --target "$SERVE_URL" -c 2 --filter 'path:/v1/*' --out "$WORK/ok.rtrace" \
  --json >"$WORK/ok.json" 2>"$WORK/ok.err"
check_eq "$(jq -r .completed "$WORK/ok.json")" "$total" "completed with a filter that matches every exchange"
echo ok
