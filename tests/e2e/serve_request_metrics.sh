#!/usr/bin/env bash
# `retrace serve --per-request-metrics` ends each answer with vLLM's per-request "metrics" (#42), so
# the server's own queue time and TTFT reach the trace and `stats` end to end against serve:
# 1. At --max-batch 2 and -c 8 six of every eight requests wait for a place in the batch: the
#    queue is most of their TTFT, and stats' "queue % of TTFT" row says so for every exchange;
#    "TTFT − server's" takes both the queue and the server's TTFT (which starts at scheduling) off.
# 2. At -c 1 nothing waits: the same row is near 0.
# 3. Without the flag no answer says it, and stats has no such row.
# 4. The body of a request that is not streamed carries it too (export's "server").
. "$(dirname "$0")/lib.sh"

COUNT=12
import_numbered "$WORK/streamed.rtrace" $COUNT \
  '{"request":{"model":"retrace-sim","prompt":"Question %d: what now?","max_tokens":16,"temperature":0,"ignore_eos":true,"stream":true}}' \
  --endpoint completions
sed 's/"stream":true/"stream":false/' "$WORK/streamed.jsonl" | head -2 >"$WORK/whole.jsonl"
"$RETRACE" import "$WORK/whole.jsonl" --out "$WORK/whole.rtrace" --endpoint chat >/dev/null || fail "import whole"

start_listening SAYS "$RETRACE" serve --listen 127.0.0.1:0 --per-request-metrics --max-batch 2
start_listening QUIET "$RETRACE" serve --listen 127.0.0.1:0 --max-batch 2

run() {  # URL SOURCE CONCURRENCY OUT
  "$RETRACE" replay "$WORK/$2.rtrace" --target "$1" -c "$3" -o "$WORK/$4.rtrace" --no-scrape >/dev/null 2>"$WORK/$4.err" \
    || { cat "$WORK/$4.err" >&2; fail "replay $4"; }
  "$RETRACE" stats --json "$WORK/$4.rtrace" >"$WORK/$4.json" || fail "stats $4"
  "$RETRACE" stats "$WORK/$4.rtrace" >"$WORK/$4.txt" || fail "stats text $4"
}

# 1. Loaded: most of each waiting request's TTFT is the queue, as the server said it.
run "$SAYS_URL" streamed 8 loaded
check_eq "$(json "$WORK/loaded.json" 's.queue_share_of_ttft_pct.count')" "$COUNT" "every exchange's queue share"
check "the queue is most of a loaded run's TTFT: $(json "$WORK/loaded.json" 'JSON.stringify(s.queue_share_of_ttft_pct)')" \
  test "$(json "$WORK/loaded.json" 's.queue_share_of_ttft_pct.p50 > 50')" = true
check_contains "$WORK/loaded.txt" "queue % of TTFT" "stats' row"
check_contains "$WORK/loaded.txt" "TTFT − server's" "stats' network row"
# vLLM's time_to_first_token_ms starts at scheduling, after its queue_time_ms: what the server does
# not account for is TTFT minus both, the loopback and the HTTP front — not the queue again.
check "what is left of a loaded TTFT past the server's queue and TTFT is not the queue: $(json "$WORK/loaded.json" 'JSON.stringify([s.ttft_minus_server_ms, s.ttft_ms.p50])')" \
  test "$(json "$WORK/loaded.json" 's.ttft_minus_server_ms.count == '$COUNT' && s.ttft_minus_server_ms.p50 < s.ttft_ms.p50 / 2')" = true

# 2. Alone: nothing waits.
run "$SAYS_URL" streamed 1 alone
check_eq "$(json "$WORK/alone.json" 's.queue_share_of_ttft_pct.count')" "$COUNT" "alone: every exchange's queue share"
check "nothing waits at -c 1: $(json "$WORK/alone.json" 'JSON.stringify(s.queue_share_of_ttft_pct)')" \
  test "$(json "$WORK/alone.json" 's.queue_share_of_ttft_pct.max < 10')" = true

# 3. Without the flag: not said, no row.
run "$QUIET_URL" streamed 8 quiet
check_eq "$(json "$WORK/quiet.json" 's.queue_share_of_ttft_pct === undefined || s.queue_share_of_ttft_pct.count === 0')" \
  true "no queue share without --per-request-metrics"
grep -q "queue % of TTFT" "$WORK/quiet.txt" && fail "a queue row without --per-request-metrics"

# 4. A body not streamed says it as vLLM's does, typed in the trace.
run "$SAYS_URL" whole 1 whole_run
"$RETRACE" export "$WORK/whole_run.rtrace" | grep -m1 '"exchange"' >"$WORK/whole.first" || fail "export"
check_eq "$(json "$WORK/whole.first" '[s.exchange.server.source, s.exchange.server.queue_ms >= 0, s.exchange.server.ttft_ms > 0, s.exchange.server.decode_ms > 0].join(" ")')" \
  "vllm true true true" "a whole body's metrics"
echo "PASS"
