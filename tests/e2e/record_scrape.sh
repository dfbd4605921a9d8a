#!/usr/bin/env bash
# record scrapes its upstream's /metrics into the trace when asked (#42):
# 1. record --scrape-interval 100ms in front of `retrace serve`, 12 requests through it: the
#    trace holds the series on the exchanges' clock (a baseline before the first send, one after
#    the last answer), the sim's `running`, and its requests-served counter's increases add up to
#    the 12 requests exactly (the last scrape is taken after the drain).
# 2. An upstream without /metrics: one line on stderr, every exchange still recorded.
# 3. By default record does not scrape: the trace holds no series.
. "$(dirname "$0")/lib.sh"

COUNT=12
import_numbered "$WORK/source.rtrace" $COUNT \
  '{"request":{"model":"retrace-sim","prompt":"Question %d: what now?","max_tokens":16,"temperature":0,"ignore_eos":true,"stream":true}}' \
  --endpoint completions

record_run() {  # NAME UPSTREAM [RECORD FLAGS...]: COUNT requests through a record, then stopped
  local name=$1 upstream=$2; shift 2
  start_listening "REC_$name" "$RETRACE" record --upstream "$upstream" --out "$WORK/$name.rtrace" \
    --listen 127.0.0.1:0 "$@"
  local url_var="REC_${name}_URL" pid_var="REC_${name}_PID"
  "$RETRACE" replay "$WORK/source.rtrace" --target "${!url_var}" -c 4 -o "$WORK/$name.replayed.rtrace" --no-scrape \
    >/dev/null 2>"$WORK/$name.replay.err" || { cat "$WORK/$name.replay.err" >&2; fail "$name: replay through record"; }
  stop "${!pid_var}" || fail "$name: record's exit"
}

# 1. Scraped: the series on the trace's clock, the counter's increases exact.
start_listening SIM "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off
record_run scraped "$SIM_URL" --scrape-interval 100ms
"$RETRACE" export --metrics "$WORK/scraped.rtrace" >"$WORK/scraped.series" || fail "export --metrics"
"$RETRACE" export "$WORK/scraped.rtrace" >"$WORK/scraped.jsonl" || fail "export"
python3 "$(dirname "$0")/served_series.py" "$WORK/scraped.series" "$WORK/scraped.jsonl" "$COUNT" || fail "the recorded series"

# 2. No /metrics: said once, the recording goes on.
start_listening UP python3 "$(dirname "$0")/metrics_upstream.py" 0 none
sed 's/"stream":true/"stream":false/' "$WORK/source.jsonl" | head -3 >"$WORK/plain.jsonl"
"$RETRACE" import "$WORK/plain.jsonl" --out "$WORK/source.rtrace.plain" --endpoint completions >/dev/null || fail "import plain"
mv "$WORK/source.rtrace.plain" "$WORK/source.rtrace"
record_run bare "$UP_URL" --scrape-interval 100ms
check_eq "$(grep -c 'usable' "$WORK/REC_bare.err")" 1 "no /metrics: one line"
check_contains "$WORK/REC_bare.err" "no usable $UP_URL/metrics (HTTP 404)" "no /metrics said"
check_eq "$("$RETRACE" export "$WORK/bare.rtrace" | grep -c '"exchange"')" 3 "no /metrics: every exchange recorded"

# 3. By default: no series.
record_run quiet "$UP_URL"
"$RETRACE" export --metrics "$WORK/quiet.rtrace" >"$WORK/quiet.series" 2>"$WORK/quiet.err" || fail "export --metrics quiet"
check_eq "$(wc -l <"$WORK/quiet.series")" 0 "no series without --scrape-interval"
check_contains "$WORK/quiet.err" "holds no /metrics series" "no series by default, said"
echo "PASS"
