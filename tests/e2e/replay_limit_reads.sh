#!/usr/bin/env bash
# replay --limit N reads only as far into its input as the first N exchanges it sends (a smoke run
# of a large trace does not read it all): a trace torn at its end replays its first 10 with no
# warning, with a --filter too (a run that reads its input as it sends it stops once it has chosen
# 10), while a run that must read it all (no --limit; --sessions with a filter, which loads the
# trace whole) warns of the torn tail and replays what it could read. sweep and bisect read their
# input the same way, and name a damaged one as replay does.
. "$(dirname "$0")/lib.sh"

start_listening SIM "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off
# Five zstd frames of 64 exchanges (import's default).
import_numbered "$WORK/many.rtrace" 300 '{"request": {"prompt": "story %d", "max_tokens": 2, "temperature": 0}}' \
  --endpoint completions
size=$(stat -c %s "$WORK/many.rtrace")
truncate -s $((size * 9 / 10)) "$WORK/many.rtrace"  # torn in the index at its end

"$RETRACE" replay "$WORK/many.rtrace" --target "$SIM_URL" --out "$WORK/first.rtrace" -c 4 --limit 10 \
  --json >"$WORK/first.json" 2>"$WORK/first.err"
check_eq "$(jq -r .completed "$WORK/first.json")" 10 "completed with --limit 10"
check_eq "$(grep -c 'warning' "$WORK/first.err")" 0 "warnings when only the first 10 are read"

"$RETRACE" replay "$WORK/many.rtrace" --target "$SIM_URL" --out "$WORK/filtered.rtrace" -c 4 --limit 10 \
  --filter 'path:/v1/*' --json >"$WORK/filtered.json" 2>"$WORK/filtered.err"
check_eq "$(jq -r .completed "$WORK/filtered.json")" 10 "completed with --limit 10 and a filter"
check_eq "$(grep -c 'warning' "$WORK/filtered.err")" 0 "warnings when a filter has chosen the first 10"

"$RETRACE" replay "$WORK/many.rtrace" --target "$SIM_URL" --out "$WORK/loaded.rtrace" -c 4 --limit 10 \
  --filter 'path:/v1/*' --sessions --json >"$WORK/loaded.json" 2>"$WORK/loaded.err"
check_eq "$(jq -r .completed "$WORK/loaded.json")" 10 "completed with --limit 10, a filter and --sessions"
check_contains "$WORK/loaded.err" "warning" "the torn tail, read whole with a filter and --sessions"

"$RETRACE" replay "$WORK/many.rtrace" --target "$SIM_URL" --out "$WORK/all.rtrace" -c 8 \
  --json >"$WORK/all.json" 2>"$WORK/all.err"
check_contains "$WORK/all.err" "warning" "the torn tail, read whole"
readable=$(sed -nE 's/.*replaying the ([0-9]+) readable exchanges.*/\1/p' "$WORK/all.err")
check "readable exchanges named ($readable)" test "$readable" -ge 10
check_eq "$(jq -r .completed "$WORK/all.json")" "$readable" "completed, read whole"

# The first 10 sent are the same requests either way.
keys() { "$RETRACE" export "$1" | jq -r 'select(.exchange) | .exchange.source_id' | sort -n | head -10 | paste -sd, -; }
check_eq "$(keys "$WORK/first.rtrace")" "$(keys "$WORK/filtered.rtrace")" "source ids of the first 10"
check_eq "$(keys "$WORK/first.rtrace")" "$(keys "$WORK/loaded.rtrace")" "source ids of the first 10, loaded"

"$RETRACE" sweep "$WORK/many.rtrace" --target "$SIM_URL" --concurrency 1,2 --repeat 1 --limit 4 \
  --out "$WORK/sweep" >/dev/null 2>"$WORK/sweep.err"
check_eq "$(grep -c 'warning' "$WORK/sweep.err")" 0 "sweep's warnings when only the first 4 are read"
check_contains "$WORK/sweep.err" "4 requests, 0 errors" "sweep's runs of 4"
"$RETRACE" sweep "$WORK/many.rtrace" --target "$SIM_URL" --concurrency 1,2 --repeat 1 --limit 4 \
  --filter 'path:/v1/*' --out "$WORK/sweep-filtered" >/dev/null 2>"$WORK/sweep-filtered.err"
check_contains "$WORK/sweep-filtered.err" "sweep: warning: " "sweep names the torn tail"
check_contains "$WORK/sweep-filtered.err" "readable exchanges" "sweep says what it replays"
"$RETRACE" bisect --over concurrency --range 1..2 --trace "$WORK/many.rtrace" --target "$SIM_URL" \
  --limit 4 --filter 'path:/v1/*' --out "$WORK/bisect" >/dev/null 2>"$WORK/bisect.err"
check_contains "$WORK/bisect.err" "bisect: warning: " "bisect names the torn tail"
echo "replay, sweep and bisect read only what they send, and name a damaged input: ok"
