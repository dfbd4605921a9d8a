#!/usr/bin/env bash
# --timeout is an idle timeout: a stream far longer than it completes while its tokens keep
# coming, and a gap longer than it gives the request up, the message naming --timeout. The total
# limit is --request-deadline (none by default), and its message names it. The simulator paces the
# tokens (one batch iteration each, --decode-step-ms); every margin is at least 5x, so a loaded
# machine does not turn one outcome into another.
. "$(dirname "$0")/lib.sh"

import_numbered "$WORK/long.rtrace" 2 \
  '{"request": {"prompt": "a long story %d", "max_tokens": 40, "ignore_eos": true, "temperature": 0}}' \
  --endpoint completions
ex() { "$RETRACE" export "$1" | jq -c 'select(.exchange) | .exchange'; }
kinds() { ex "$1" | jq -r '.error.kind' | sort | uniq -c | awk '{print $2 "=" $1}' | paste -sd, -; }

# --- 40 tokens 100 ms apart: at least 4 s a stream, four times --timeout, with gaps of a tenth.
start_listening PACED "$RETRACE" serve --listen 127.0.0.1:0 --decode-step-ms 100 \
  --decode-ms-per-sequence 0 --prefill-ms-per-token 0
"$RETRACE" replay "$WORK/long.rtrace" --target "$PACED_URL" --out "$WORK/paced.rtrace" -c 2 \
  --timeout 1s --json >"$WORK/paced.json"
check_eq "$(jq -r .completed "$WORK/paced.json")" 2 "streams longer than --timeout, completed"
check_eq "$(kinds "$WORK/paced.rtrace")" "none=2" "error kinds, paced streams"
check_eq "$(ex "$WORK/paced.rtrace" | jq -r '.usage.completion_tokens' | sort -u)" 40 "every token arrived"
# Each stream lasted longer than --timeout (end_ns counts from the send; the pacing makes it at
# least 4 s): the limit was not a deadline in disguise.
check_eq "$(ex "$WORK/paced.rtrace" | jq -r 'select(.end_ns > 1000000000) | 1' | wc -l)" 2 \
  "streams last longer than --timeout"
check_eq "$("$RETRACE" export "$WORK/paced.rtrace" | jq -r 'select(.header) | .header.settings | fromjson |
  [.timeout_ms, (.request_deadline_ms // "none")] | @tsv' | head -1)" $'1000\tnone' "run settings name the limits"

# --- --request-deadline 800ms on the same 4 s streams: given up, naming the deadline.
status=0
"$RETRACE" replay "$WORK/long.rtrace" --target "$PACED_URL" --out "$WORK/deadline.rtrace" -c 2 \
  --timeout 10s --request-deadline 800ms >/dev/null 2>&1 || status=$?
check_eq "$status" 1 "exit status, past the deadline"
check_eq "$(kinds "$WORK/deadline.rtrace")" "timeout=2" "error kinds, past the deadline"
check_eq "$(ex "$WORK/deadline.rtrace" | jq -r '.error.message' | grep -c -- '--request-deadline 800ms')" 2 \
  "the message names --request-deadline"
# What arrived before the deadline is kept.
check_eq "$(ex "$WORK/deadline.rtrace" | jq -r 'select((.response.events | length) > 0) | 1' | wc -l)" 2 \
  "events before the deadline kept"

# --- a gap of 3 s between the head and the first token, against --timeout 500ms.
start_listening STALLED "$RETRACE" serve --listen 127.0.0.1:0 --decode-step-ms 3000 \
  --decode-ms-per-sequence 0 --prefill-ms-per-token 0
status=0
"$RETRACE" replay "$WORK/long.rtrace" --target "$STALLED_URL" --out "$WORK/idle.rtrace" -c 2 \
  --timeout 500ms --request-deadline 1h >/dev/null 2>&1 || status=$?
check_eq "$status" 1 "exit status, a gap longer than --timeout"
check_eq "$(kinds "$WORK/idle.rtrace")" "timeout=2" "error kinds, a gap longer than --timeout"
check_eq "$(ex "$WORK/idle.rtrace" | jq -r '.error.message' | grep -c -- 'sent nothing for --timeout 500ms')" 2 \
  "the message names the idle --timeout"
check_eq "$(ex "$WORK/idle.rtrace" | jq -r '.error.message' | grep -c -- 'request-deadline')" 0 \
  "the message does not blame the deadline"

# --- sweep and bisect share the flags: a resumed sweep keeps the deadline from plan.json.
status=0
"$RETRACE" sweep "$WORK/long.rtrace" --target "$PACED_URL" --out "$WORK/sweep" --concurrency 2 \
  --timeout 10s --request-deadline 800ms >/dev/null 2>&1 || status=$?
check_eq "$(jq -r .replay.request_deadline "$WORK/sweep/plan.json")" 800ms "the sweep's plan keeps the deadline"
check_eq "$(kinds "$(ls "$WORK"/sweep/*.rtrace | head -1)")" "timeout=2" "error kinds, a sweep past the deadline"
echo "ok"
