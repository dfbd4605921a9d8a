#!/usr/bin/env bash
# retrace replay against retrace serve: closed loop reaches the batch size it asks for (per the
# server's /metrics), open loop follows the arrival process (intended send times in the trace),
# recorded timing keeps the input's spacing, overrides and headers go out as asked while secrets
# never reach the trace, --repeat writes labelled traces, and a replay of a replay aligns with
# the original by source id. `retrace stats` reads the same figures back.
. "$(dirname "$0")/lib.sh"

start_listening SIM "$RETRACE" serve --listen 127.0.0.1:0
"$RETRACE" import "$ROOT/traces/gold-intents.jsonl" --out "$WORK/gold.rtrace" >/dev/null
ex() { "$RETRACE" export "$1" | jq -c 'select(.exchange) | .exchange'; }

# --- closed loop: 16 in flight; the simulator's default latency model makes them overlap.
"$RETRACE" replay "$WORK/gold.rtrace" --target "$SIM_URL" --out "$WORK/c16.rtrace" -c 16 \
  --set max_tokens=64 --set ignore_eos=true --json >"$WORK/c16.json"
check_eq "$(jq -r .completed "$WORK/c16.json")" 20 "completed at -c 16"
check_eq "$(jq -r '.errors | length' "$WORK/c16.json")" 0 "errors at -c 16"
batch_max=$(curl -sS "$SIM_URL/metrics" | awk '/^retrace_sim_batch_sequences_max[{ ]/{print $2}')
check_eq "$batch_max" 16 "largest batch the server saw for -c 16"
ex "$WORK/c16.rtrace" >"$WORK/c16.jsonl"
check_eq "$(wc -l <"$WORK/c16.jsonl")" 20 "exchanges in the -c 16 trace"
check_eq "$(jq -r '.labels.concurrency' "$WORK/c16.jsonl" | sort -u)" 16 "concurrency label"
check_eq "$(jq -r '.source_id' "$WORK/c16.jsonl" | sort -n | uniq | wc -l)" 20 "distinct source ids"
# Every exchange kept its stream and its expected answer; the header kept what the server said.
check_eq "$(jq -r 'select(.choices[0].tokens | length == 0) | .id' "$WORK/c16.jsonl" | wc -l)" 0 "exchanges without tokens"
check_eq "$(jq -r 'select(.expected == null) | .id' "$WORK/c16.jsonl" | wc -l)" 0 "exchanges without expected"
"$RETRACE" export "$WORK/c16.rtrace" | jq -r 'select(.header) | .header.server_info' >"$WORK/info.json"
check_contains "$WORK/info.json" "retrace_sim_batch_sequences_max" "metrics scrape in server_info"
check_eq "$(jq -r '.models.data[0].id' "$WORK/info.json")" "retrace-sim" "models in server_info"
check_eq "$(jq -r '.metrics_after | test("retrace_sim_batch_sequences_max[{][^}]*[}] 16")' "$WORK/info.json")" true "after-scrape sees the batch"

# --- open loop, Poisson at 40/s with a fixed seed (arrival statistics over many samples are in
# tests/replay_test.cpp; here: the plan reaches the trace, reproducibly, and sends never run early).
"$RETRACE" replay "$WORK/gold.rtrace" --target "$SIM_URL" --out "$WORK/rate.rtrace" --rate 40 \
  --seed 7 --set max_tokens=4 --json >"$WORK/rate.json"
check_eq "$(jq -r .open_loop "$WORK/rate.json")" true "rate is reported as open loop"
check_eq "$(jq -r .schedule_slip_ms.count "$WORK/rate.json")" 20 "slip measured for every exchange"
ex "$WORK/rate.rtrace" | jq -r '.intended_send_ns' | sort -n >"$WORK/intended.txt"
# 20 Poisson arrivals at 40/s: the last lands near 19/40 s = 0.475 s; a 6-sigma band (sd of a sum
# of 19 exponential gaps is sqrt(19)/40 s = 0.109 s) is (0, 1.13 s).
last=$(tail -1 "$WORK/intended.txt")
first=$(head -1 "$WORK/intended.txt")
check_eq "$first" 0 "the first arrival is at 0"
(( last > 0 && last < 1130000000 )) || fail "last Poisson arrival at $last ns, outside (0, 1.13 s)"
# The same seed gives the same plan; actual sends are never before intended ones.
"$RETRACE" replay "$WORK/gold.rtrace" --target "$SIM_URL" --out "$WORK/rate2.rtrace" --rate 40 \
  --seed 7 --set max_tokens=4 >/dev/null
check_eq "$(ex "$WORK/rate2.rtrace" | jq -r '.intended_send_ns' | sort -n | md5sum)" \
  "$(md5sum <"$WORK/intended.txt")" "intended times with the same seed"
check_eq "$(ex "$WORK/rate.rtrace" | jq -r 'select(.actual_send_ns < .intended_send_ns) | .id' | wc -l)" 0 \
  "sends before their intended time"
# Constant arrivals at 20/s: intended times are exactly k * 50 ms.
"$RETRACE" replay "$WORK/gold.rtrace" --target "$SIM_URL" --out "$WORK/const.rtrace" --rate 20 \
  --arrival constant --set max_tokens=2 >/dev/null
ex "$WORK/const.rtrace" | jq -r '.intended_send_ns' | sort -n >"$WORK/const.txt"
check_eq "$(seq 0 19 | awk '{print $1 * 50000000}' | md5sum)" "$(md5sum <"$WORK/const.txt")" "constant arrivals"

# --- recorded timing: the constant run's own send times, twice as fast.
"$RETRACE" replay "$WORK/const.rtrace" --target "$SIM_URL" --out "$WORK/timed.rtrace" \
  --timing recorded --speed 2 --set max_tokens=2 >/dev/null
ex "$WORK/const.rtrace" | jq -r '[.id, .actual_send_ns] | @tsv' | sort -k1,1 >"$WORK/const_actual.tsv"
ex "$WORK/timed.rtrace" | jq -r '[.source_id, .intended_send_ns] | @tsv' | sort -k1,1 >"$WORK/timed.tsv"
check_eq "$(wc -l <"$WORK/timed.tsv")" 20 "exchanges replayed with recorded timing"
first_actual=$(cut -f2 "$WORK/const_actual.tsv" | sort -n | head -1)
join "$WORK/const_actual.tsv" "$WORK/timed.tsv" | while read -r id actual intended; do
  want=$(( (actual - first_actual) / 2 ))
  (( intended - want <= 1 && want - intended <= 1 )) || fail "exchange $id: intended $intended, want $want"
done

# --- overrides, headers, credentials. Without a temperature the simulator samples, and may
# sample its end of sequence before max_tokens (1 exchange in ~75 did): ignore_eos keeps the
# count exact.
export REPLAY_TEST_KEY=sk-SECRET-0123456789
"$RETRACE" replay "$WORK/gold.rtrace" --target "$SIM_URL" --out "$WORK/over.rtrace" -c 4 \
  --set max_tokens=3 --set ignore_eos=true --set stream=true --set stream_options.include_usage=true --unset temperature \
  --header 'X-Replay-Test: hello' --header 'X-Api-Key: SECRET-too' --api-key-env REPLAY_TEST_KEY \
  --header 'X-Note: eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0.' --label team=blue --limit 5 >/dev/null
check_eq "$(zstd -dc "$WORK/over.rtrace" | grep -c SECRET || true)" 0 "secrets in the trace"
ex "$WORK/over.rtrace" >"$WORK/over.jsonl"
check_eq "$(wc -l <"$WORK/over.jsonl")" 5 "--limit 5"
check_eq "$(jq -r '.usage.completion_tokens' "$WORK/over.jsonl" | sort -u)" 3 "completion tokens with --set max_tokens=3"
check_eq "$(jq -r '.response.streamed' "$WORK/over.jsonl" | sort -u)" true "--set stream=true streams"
check_eq "$(jq -r '.request.body | fromjson | [.max_tokens, .stream_options.include_usage, has("temperature")] | @csv' "$WORK/over.jsonl" | sort -u)" \
  "3,true,false" "request bodies as sent"
check_eq "$(jq -r '.request.headers[] | select(.[0] == "X-Replay-Test") | .[1]' "$WORK/over.jsonl" | sort -u)" hello "custom header"
check_eq "$(jq -r '.request.headers[] | select(.[0] == "Authorization") | .[1]' "$WORK/over.jsonl" | sort -u)" "[redacted]" "Authorization redacted"
# --header's rule as its help states it (#34 item 7): kept, unless a secret-looking name or a value
# shaped like a JWT or a known key.
"$RETRACE" replay --help >"$WORK/replay_help.txt"
check_contains "$WORK/replay_help.txt" "the run's trace and outputs keep it unless the secret policy redacts it" "--header's rule in the help"
check_eq "$(jq -r '.request.headers[] | select(.[0] == "X-Api-Key") | .[1]' "$WORK/over.jsonl" | sort -u)" "[redacted]" "a --header with a secret name"
check_eq "$(jq -r '.request.headers[] | select(.[0] == "X-Note") | .[1]' "$WORK/over.jsonl" | sort -u)" "[redacted]" "a --header whose value is a JWT"
check_eq "$(jq -r '.labels.team' "$WORK/over.jsonl" | sort -u)" blue "--label"
# The request key is that of the body as sent.
check_eq "$(jq -r '.key' "$WORK/over.jsonl" | sort -u | wc -l)" 5 "request keys of rewritten bodies"

# --- --repeat: labelled traces; a replay of a replay aligns with the original through source ids.
"$RETRACE" replay "$WORK/gold.rtrace" --target "$SIM_URL" --out "$WORK/rep.rtrace" -c 2 --repeat 2 \
  --set max_tokens=2 >/dev/null
for k in 1 2; do
  [[ -f "$WORK/rep.r$k.rtrace" ]] || fail "--repeat 2 did not write rep.r$k.rtrace"
  check_eq "$(ex "$WORK/rep.r$k.rtrace" | jq -r '.labels.repeat' | sort -u)" $k "repeat label of run $k"
done
"$RETRACE" replay "$WORK/rep.r1.rtrace" --target "$SIM_URL" --out "$WORK/rere.rtrace" -c 3 >/dev/null
ex "$WORK/rep.r1.rtrace" | jq -r '[.id, .source_id] | @tsv' | sort -k1,1 >"$WORK/r1.tsv"
ex "$WORK/rere.rtrace" | jq -r '[.source_id, .key] | @tsv' | sort -k1,1 >"$WORK/rere.tsv"
# rere.source_id -> r1.id -> r1.source_id = an original id, and every original id is reached once.
check_eq "$(join "$WORK/r1.tsv" "$WORK/rere.tsv" | awk '{print $2}' | sort -n | uniq | wc -l)" 20 "replay of a replay reaches every original"

# --- stats reads any trace; the figures match what replay printed.
"$RETRACE" stats "$WORK/c16.rtrace" --json >"$WORK/c16.stats.json"
check_eq "$(jq -r .completed "$WORK/c16.stats.json")" 20 "stats: completed"
check_eq "$(jq -r .output_tokens "$WORK/c16.stats.json")" "$(jq -r .output_tokens "$WORK/c16.json")" "stats: output tokens"
"$RETRACE" stats "$WORK/c16.rtrace" "$WORK/rate.rtrace" --slo ttft:10s >"$WORK/stats.txt"
check_contains "$WORK/stats.txt" "goodput" "stats text with --slo"
check_contains "$WORK/stats.txt" "schedule slip" "stats text of an open-loop run"

# --- bad input is refused with a reason, before any traffic.
if "$RETRACE" replay "$WORK/gold.rtrace" --target "$SIM_URL" --out "$WORK/x.rtrace" -c 2 --rate 3 2>"$WORK/err.txt"; then
  fail "two schedules were accepted"
fi
check_contains "$WORK/err.txt" "exactly one schedule" "two schedules"
if "$RETRACE" replay "$WORK/gold.rtrace" --target "$SIM_URL" --out "$WORK/x.rtrace" -c 2 --set messages.x=1 2>"$WORK/err.txt"; then
  fail "a --set through an array with a name was accepted"
fi
check_contains "$WORK/err.txt" "messages.x" "bad --set path"

stop "$SIM_PID" || fail "serve exited non-zero"
echo "replay_schedules: ok"
