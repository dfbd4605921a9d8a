#!/usr/bin/env bash
# Trace users' controls against retrace serve: a sweep over open-loop rates that sends 30 requests
# cycling the 20-question gold set (runs named by level, the axis in every summary, each copy of a
# question compared with the baseline's copy of the same question), and recorded-timing replays of
# a small Mooncake-format file cut by --window-from/--window-to and compressed by --max-idle-gap.
# Intended send offsets are the plan (data), so they are checked exactly; actual sends are not.
. "$(dirname "$0")/lib.sh"

start_listening SIM "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off
ex() { "$RETRACE" export "$1" | jq -c 'select(.exchange) | .exchange'; }
settings() { "$RETRACE" export "$1" | jq -c 'select(.header) | .header.settings | fromjson'; }
intended_ms() { ex "$1" | jq -r '.intended_send_ns / 1000000' | sort -n | tr '\n' ' '; }

# --- sweep --rate 20,40 --requests 30 over the gold set.
"$RETRACE" import "$ROOT/traces/gold-intents.jsonl" --out "$WORK/gold.rtrace" >/dev/null
"$RETRACE" sweep "$WORK/gold.rtrace" --target "$SIM_URL" --rate 20,40 --requests 30 --repeat 1 \
  --set max_tokens=8 --out "$WORK/sweep" --json >"$WORK/summary.json" 2>"$WORK/sweep.err" \
  || { cat "$WORK/sweep.err" >&2; fail "sweep --rate"; }
for run in rate20-r1 rate40-r1; do
  [[ -f "$WORK/sweep/$run.rtrace" ]] || fail "no run file $run.rtrace"
  ex "$WORK/sweep/$run.rtrace" >"$WORK/$run.jsonl"
  check_eq "$(wc -l <"$WORK/$run.jsonl")" 30 "requests sent in $run"
  # 30 from 20 questions: ten of them twice.
  check_eq "$(jq -r .source_id "$WORK/$run.jsonl" | sort | uniq -c | awk '$1 == 2' | wc -l)" 10 \
    "questions sent twice in $run"
  check_eq "$(jq -r .labels.rate "$WORK/$run.jsonl" | sort -u)" "${run:4:2}" "rate label of $run"
done
check_eq "$(settings "$WORK/sweep/rate40-r1.rtrace" | jq -c '[.schedule.kind, .schedule.rate, .schedule.arrival, .requests]')" \
  '["rate",40,"poisson",30]' "the rate run's settings"
# Every copy keeps its own question's expected answer.
ex "$WORK/gold.rtrace" | jq -c '{id, expected}' >"$WORK/gold-expected.jsonl"
check_eq "$(jq -s 'map({(.id | tostring): .expected}) | add' "$WORK/gold-expected.jsonl" >"$WORK/by-id.json"
            jq -r --slurpfile by "$WORK/by-id.json" 'select(.expected != $by[0][(.source_id | tostring)]) | .id' \
              "$WORK/rate40-r1.jsonl" | wc -l)" 0 "copies whose expected answer is another question's"
# The diff paired all 30: copy k of a question with the baseline's copy k (the simulator answers
# the same question the same way), nothing missing.
check_eq "$(jq -r .axis "$WORK/summary.json")" rate "summary.json axis"
# Open loop: each run's client line carries its schedule slip, as replay's does.
check_eq "$(jq -r '[.runs[].client.summary | test("^used [0-9]+ % of one core .*; schedule slip p99 [0-9.]+ ms$")] | all' "$WORK/summary.json")" \
  true "each rate run's client line has its schedule slip p99"
check_eq "$(jq -r '.client.summary | test("^client: busiest run \\(rate=[24]0, repeat 1\\) used [0-9]+ % of one core")' "$WORK/summary.json")" \
  true "the sweep's client line names its busiest rate"
check_eq "$(jq -c '[.levels[].rate]' "$WORK/summary.json")" "[20,40]" "summary.json levels"
check_eq "$(jq -c '[.runs[] | select(.baseline | not) | .identical, .missing, .divergent]' "$WORK/summary.json")" "[30,0,0]" \
  "the candidate run against the baseline"
check_eq "$(jq -c '[.levels[].requests]' "$WORK/summary.json")" "[30,30]" "requests per level"
check_eq "$(head -1 "$WORK/sweep/summary.csv" | cut -d, -f1)" rate "summary.csv's axis column"
check_contains "$WORK/sweep/summary.md" "| rate | runs |" "summary.md's axis column"
check_eq "$(jq -r .axis "$WORK/sweep/plan.json")" rate "plan.json axis"
check_eq "$(jq -r .header.schedule "$WORK/summary.json")" "rate 20,40 × 1 repeats (poisson arrivals), 30 requests" \
  "the sweep's schedule"

# One axis only, and --requests is not for the recorded clock.
if "$RETRACE" sweep "$WORK/gold.rtrace" --target "$SIM_URL" --rate 1 -c 2 --out "$WORK/bad" 2>"$WORK/bad.err"; then
  fail "two axes accepted"
fi
check_contains "$WORK/bad.err" "give one axis" "two axes refused"
if "$RETRACE" replay "$WORK/gold.rtrace" --target "$SIM_URL" --timing recorded --requests 5 \
    --out "$WORK/bad.rtrace" 2>"$WORK/bad.err"; then
  fail "--requests with recorded timing accepted"
fi
check_contains "$WORK/bad.err" "use -c N or --rate R" "--requests with recorded timing refused"
[[ ! -e "$WORK/bad.rtrace" ]] || fail "a refused replay left its output"

# --duration: no request is planned at or after it (constant arrivals at 20/s for 1 s: at most the
# 20 at 0, 50, ..., 950 ms; fewer if the machine falls behind), and the header says so.
"$RETRACE" replay "$WORK/gold.rtrace" --target "$SIM_URL" --rate 20 --arrival constant --requests 200 \
  --duration 1s --set max_tokens=2 --out "$WORK/timed.rtrace" >/dev/null
sent=$(ex "$WORK/timed.rtrace" | wc -l)
(( sent >= 1 && sent <= 20 )) || fail "--duration 1s at 20/s sent $sent requests"
check_eq "$(ex "$WORK/timed.rtrace" | jq -r 'select(.intended_send_ns >= 1000000000) | .id' | wc -l)" 0 \
  "requests planned after --duration"
check_eq "$(settings "$WORK/timed.rtrace" | jq -c '[.duration_ms, .requests]')" "[1000,200]" "--duration in the settings"
"$RETRACE" stats "$WORK/timed.rtrace" >"$WORK/timed.txt"
check_contains "$WORK/timed.txt" "200 requests, no new request after 1000 ms" "--duration in the report's header"

# --- recorded timing over a Mooncake-format file: a burst at 1 s, then 5 s, 65 s and 66 s.
cat >"$WORK/mooncake.jsonl" <<'ROWS'
{"timestamp": 0, "input_length": 40, "output_length": 2, "hash_ids": [1]}
{"timestamp": 1000, "input_length": 40, "output_length": 2, "hash_ids": [1]}
{"timestamp": 1000, "input_length": 40, "output_length": 2, "hash_ids": [2]}
{"timestamp": 5000, "input_length": 40, "output_length": 2, "hash_ids": [3]}
{"timestamp": 65000, "input_length": 40, "output_length": 2, "hash_ids": [1]}
{"timestamp": 66000, "input_length": 40, "output_length": 2, "hash_ids": [4]}
ROWS
"$RETRACE" import "$WORK/mooncake.jsonl" --out "$WORK/mooncake.rtrace" 2>/dev/null
# The window [1 s, 60 s) keeps the burst and the 5 s row, from 1 s on: 0, 0, 4000 ms; at --speed 2
# that is 0, 0, 2000 ms, and --max-idle-gap 500ms (after the speed) makes it 0, 0, 500 ms.
"$RETRACE" replay "$WORK/mooncake.rtrace" --target "$SIM_URL" --timing recorded --speed 2 \
  --window-from 1s --window-to 1m --max-idle-gap 500ms --out "$WORK/window.rtrace" >/dev/null
check_eq "$(intended_ms "$WORK/window.rtrace")" "0 0 500 " "intended offsets in the window"
check_eq "$(ex "$WORK/window.rtrace" | jq -r .source_id | sort -n | tr '\n' ' ')" "2 3 4 " "exchanges in the window (ids from 1)"
check_eq "$(settings "$WORK/window.rtrace" | jq -c '[.window_from_ms, .window_to_ms, .max_idle_gap_ms, .schedule.speed]')" \
  "[1000,60000,500,2]" "the window and the gap in the settings"
"$RETRACE" stats "$WORK/window.rtrace" >"$WORK/window.txt"
check_contains "$WORK/window.txt" "recorded timing ×2, window 1000 ms to 60000 ms, idle gaps ≤ 500 ms" \
  "the window and the gap in the report's header"
# The whole file at --speed 10 (0, 100, 100, 500, 6500, 6600 ms) with --max-idle-gap 1s: only the
# 6 s silence shrinks. Capping before the speed would have made it 100 ms, not 1 s.
"$RETRACE" replay "$WORK/mooncake.rtrace" --target "$SIM_URL" --timing recorded --speed 10 \
  --max-idle-gap 1s --out "$WORK/gap.rtrace" >/dev/null
check_eq "$(intended_ms "$WORK/gap.rtrace")" "0 100 100 500 1500 1600 " "intended offsets with the gap capped"
# --window-from alone: the 65 s and 66 s rows, from 60 s: 5000 and 6000 ms.
"$RETRACE" replay "$WORK/mooncake.rtrace" --target "$SIM_URL" --timing recorded --speed 1000 \
  --window-from 60s --out "$WORK/tail.rtrace" >/dev/null
check_eq "$(intended_ms "$WORK/tail.rtrace")" "5 6 " "intended offsets from --window-from at --speed 1000"
# sweep --speed passes the trace controls down to every run: at 10× and 20× with the gap capped.
"$RETRACE" sweep "$WORK/mooncake.rtrace" --target "$SIM_URL" --speed 10,20 --max-idle-gap 1s --repeat 1 \
  --out "$WORK/speeds" --csv >"$WORK/speeds.csv" 2>"$WORK/speeds.err" || { cat "$WORK/speeds.err" >&2; fail "sweep --speed"; }
check_eq "$(intended_ms "$WORK/speeds/speed10-r1.rtrace")" "0 100 100 500 1500 1600 " "intended offsets at speed 10"
check_eq "$(intended_ms "$WORK/speeds/speed20-r1.rtrace")" "0 50 50 250 1250 1300 " "intended offsets at speed 20"
check_eq "$(cut -d, -f1 "$WORK/speeds.csv" | tr '\n' ' ')" "speed 10 20 " "summary.csv's speed levels"
if "$RETRACE" replay "$WORK/mooncake.rtrace" --target "$SIM_URL" -c 2 --max-idle-gap 1s \
    --out "$WORK/bad.rtrace" 2>"$WORK/bad.err"; then
  fail "--max-idle-gap without recorded timing accepted"
fi
check_contains "$WORK/bad.err" "--timing recorded" "--max-idle-gap needs recorded timing"

echo "sweep_axes: ok"
