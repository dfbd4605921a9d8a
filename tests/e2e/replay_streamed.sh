#!/usr/bin/env bash
# A replay that sends its input in the input's order (closed loop or a rate, no sessions) reads it
# as it sends it (replay/feed.hpp) instead of loading it whole: the run sends what a loaded run
# (--sessions, where every exchange is a one-turn session, sends the same requests from a loaded
# trace) sends, the same outputs against the deterministic simulator, the same open-loop schedule,
# and --requests cycles it.
. "$(dirname "$0")/lib.sh"

start_listening SIM "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off
import_numbered "$WORK/many.rtrace" 3000 \
  '{"request": {"prompt": "story %d", "max_tokens": 3, "temperature": 0}, "id": "q%d"}' --endpoint completions
ids() { "$RETRACE" export "$1" | jq -r 'select(.exchange) | .exchange.source_id' | sort -n | paste -sd, -; }

# --- closed loop: the same requests, the same outputs.
"$RETRACE" replay "$WORK/many.rtrace" --target "$SIM_URL" --out "$WORK/streamed.rtrace" -c 8 \
  --json >"$WORK/streamed.json"
"$RETRACE" replay "$WORK/many.rtrace" --target "$SIM_URL" --out "$WORK/loaded.rtrace" -c 8 --sessions \
  --json >"$WORK/loaded.json"
check_eq "$(jq -r .completed "$WORK/streamed.json")" 3000 "completed, streamed"
check_eq "$(jq -r .completed "$WORK/loaded.json")" 3000 "completed, loaded"
check_eq "$(ids "$WORK/streamed.rtrace")" "$(ids "$WORK/loaded.rtrace")" "source ids, streamed vs loaded"
"$RETRACE" diff "$WORK/loaded.rtrace" "$WORK/streamed.rtrace" >"$WORK/diff.txt"
check_contains "$WORK/diff.txt" "0 of 3000 differ" "outputs, streamed vs loaded"
# The input's labels and the run's travel with each request.
check_eq "$("$RETRACE" export "$WORK/streamed.rtrace" | jq -r 'select(.exchange) | .exchange |
  select(.source_id == 1234) | [.labels.id, .labels.run, .labels.concurrency] | @tsv')" \
  "q1234	streamed	8" "the labels of source 1234: the dataset's id and the run's"

# --- open loop: the same arrival process, request for request.
intended() { "$RETRACE" export "$1" | jq -r 'select(.exchange) | .exchange | "\(.source_id) \(.intended_send_ns)"' | sort -n | paste -sd, -; }
"$RETRACE" replay "$WORK/many.rtrace" --target "$SIM_URL" --out "$WORK/rate-streamed.rtrace" --rate 2000 \
  --seed 7 --limit 300 >/dev/null
"$RETRACE" replay "$WORK/many.rtrace" --target "$SIM_URL" --out "$WORK/rate-loaded.rtrace" --rate 2000 \
  --seed 7 --limit 300 --sessions >/dev/null
check_eq "$(intended "$WORK/rate-streamed.rtrace")" "$(intended "$WORK/rate-loaded.rtrace")" \
  "intended sends at --rate 2000, streamed vs loaded"

# --- --requests cycles the input: 7000 sends of 3000, each input two or three times.
"$RETRACE" replay "$WORK/many.rtrace" --target "$SIM_URL" --out "$WORK/cycled.rtrace" -c 8 --requests 7000 \
  --json >"$WORK/cycled.json"
check_eq "$(jq -r .completed "$WORK/cycled.json")" 7000 "completed with --requests 7000"
check_eq "$("$RETRACE" export "$WORK/cycled.rtrace" | jq -r 'select(.exchange) | .exchange.source_id' |
  sort -n | uniq -c | awk '{print $1}' | sort -n | uniq -c | awk '{print $2 "x" $1}' | paste -sd, -)" \
  "2x2000,3x1000" "how often each input was sent"
# --- a --set that cannot apply to some request fails before any traffic, as a loaded run does
# (the run reads and prepares the whole selection once first).
status=0
"$RETRACE" replay "$WORK/many.rtrace" --target "$SIM_URL" --out "$WORK/bad.rtrace" -c 8 \
  --set prompt.x=1 2>"$WORK/bad.err" >/dev/null || status=$?
check_eq "$status" 2 "exit status of a --set that cannot apply"
check_contains "$WORK/bad.err" "exchange 1 (/v1/completions): body path 'prompt.x': its parent is not an object" \
  "the first request it cannot apply to is named"
[[ ! -e "$WORK/bad.rtrace" && ! -e "$WORK/bad.rtrace.partial" ]] || fail "a trace was written for a bad --set"
echo "a streamed replay sends what a loaded one sends: ok"
