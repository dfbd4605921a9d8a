#!/usr/bin/env bash
# Segments at production counts: 10,000 chat requests of ~2 KB replayed at -c 16 through
# `record --out DIR/ --rotate-size 1MiB`, the set then read as one trace: every exchange there once
# (ids 0..9999), identical to the replay that went through the proxy, and `stats` of the whole
# set in the memory `stats` of one segment takes (one segment open at a time), within 1.5x + 16 MB.
# Outcomes are counted, never timed. Only the chat requests are recorded (--include-path): replay's
# preflight probes go through the proxy too, and are issue 40 item 6's to set aside.
. "$(dirname "$0")/lib.sh"

words_jsonl "$WORK/chat.jsonl" 10000 2000 '{"max_tokens": 16, "temperature": 0}'
"$RETRACE" import "$WORK/chat.jsonl" --out "$WORK/chat.rtrace" 2>"$WORK/import.err"
check_contains "$WORK/import.err" "imported 10000 requests" "every request imported"

start_listening SIM "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off
start_listening REC "$RETRACE" record --upstream "$SIM_URL" --out "$WORK/segs/" --rotate-size 1MiB \
  --listen 127.0.0.1:0 --no-server-info --include-path '/v1/chat/*'
"$RETRACE" replay "$WORK/chat.rtrace" --target "$REC_URL" --out "$WORK/run.rtrace" -c 16 --json \
  >"$WORK/run.json" 2>"$WORK/run.err"
check_eq "$(completed "$WORK/run.json")" 10000 "every request completed through the proxy"
stop "$REC_PID" || fail "record did not stop cleanly"
check_contains "$WORK/REC.err" "recorded 10000 exchange(s)" "record's count"

count=$(ls "$WORK/segs" | wc -l)
[[ $count -ge 3 ]] || fail "expected at least 3 segments of 1 MiB, got $count"
check_eq "$("$RETRACE" export "$WORK/segs" | jq -r 'select(.exchange) | .exchange.id' | sort -n | uniq | wc -l)" \
  10000 "distinct exchange ids across the segments"
status=0
"$RETRACE" diff "$WORK/segs" "$WORK/run.rtrace" >"$WORK/diff.txt" || status=$?
check_eq "$status" 0 "the set against the replay that went through the proxy: identical"
whole=$(peak_rss_mb "$WORK/stats-all.txt" "$WORK/stats-all.err" "$RETRACE" stats "$WORK/segs")
one=$(peak_rss_mb "$WORK/stats-one.txt" "$WORK/stats-one.err" "$RETRACE" stats "$WORK/segs/000001.rtrace")
echo "stats peak RSS: $whole MB for $count segments, $one MB for one"
[[ $whole -le $((one * 3 / 2 + 16)) ]] || fail "stats of $count segments took $whole MB, one segment $one MB"
echo ok
