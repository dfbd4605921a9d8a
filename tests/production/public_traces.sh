#!/usr/bin/env bash
# The public serving traces at their published row counts, in their published shapes, made here
# (public_traces.py: the Mooncake trace's 23,608 JSONL rows over an hour, BurstGPT_1.csv's
# 1,429.7k CSV rows over two months): each imported (in bounded memory: import streams its rows
# and spills its index), inspected (every row counted, the trace's clock spanning the rows'), and
# a short window of its own clock replayed on that clock against `retrace serve`, so the planned
# path (replay/planner.hpp) reads the whole trace, plans only the window and sends it: every row
# of the window sent and completed, in bounded memory; and `merge --trace` of two shards of the
# BurstGPT trace streams its 1.4M-row source in bounded memory. Outcomes are counted, never timed. Run time: 29 s under ctest on 2
# cores shared with four builds (load ~9), 7 s of it generating the files (bench/RESULTS.md, "The
# production-size tier").
. "$(dirname "$0")/lib.sh"

start_listening SIM "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off --max-model-len 65536

# public_trace KIND FILE FROM_S TO_S SPEED IMPORT_MB REPLAY_MB: the trace KIND generated into FILE,
# imported in at most IMPORT_MB, and the window [FROM_S, TO_S) replayed at SPEED in at most
# REPLAY_MB.
public_trace() {
  local kind=$1 file=$2 from=$3 to=$4 speed=$5 import_bound=$6 replay_bound=$7
  python3 "$(dirname "$0")/public_traces.py" "$kind" "$file" "$from" "$to" >"$WORK/$kind.want.json"
  local want rows kept
  want=$WORK/$kind.want.json rows=$(jq .rows "$WORK/$kind.want.json") kept=$(jq .kept "$WORK/$kind.want.json")
  local trace=$WORK/$kind.rtrace mb
  mb=$(peak_rss_mb /dev/null "$WORK/$kind.import.err" "$RETRACE" import "$file" --out "$trace")
  echo "$kind: $rows rows ($(( $(stat -c %s "$file") >> 20 )) MB) imported in $mb MB peak RSS"
  check_contains "$WORK/$kind.import.err" "imported $kept requests from $file ($kind)" "$kind: every row imported"
  if (( kept < rows )); then
    check_contains "$WORK/$kind.import.err" "skipped $((rows - kept)) rows that failed in production" \
      "$kind: the failed rows counted"
  fi
  (( mb <= import_bound )) || fail "$kind: import took $mb MB (bound $import_bound MB)"

  "$RETRACE" inspect "$trace" --json >"$WORK/$kind.inspect.json"
  check_eq "$(jq -r '[.counts.exchanges, .time_span.last_offset_ns - .time_span.first_send_offset_ns] | @tsv' \
    "$WORK/$kind.inspect.json")" "$kept"$'\t'"$(jq .span_ns "$want")" "$kind: inspect's exchanges and time span"

  mb=$(peak_rss_mb "$WORK/$kind.replay.json" "$WORK/$kind.replay.err" "$RETRACE" replay "$trace" --target "$SIM_URL" \
    --out "$WORK/$kind.run.rtrace" --timing recorded --speed "$speed" --window-from "${from}s" \
    --window-to "${to}s" --json)
  echo "$kind: the window [$from s, $to s) at --speed $speed, $(jq .in_window "$want") rows, replayed in $mb MB peak RSS"
  check_eq "$(jq -r '[.exchanges, .completed] | @tsv' "$WORK/$kind.replay.json")" \
    "$(jq -r '[.in_window, .in_window] | @tsv' "$want")" "$kind: every row of the window sent and completed"
  (( mb <= replay_bound )) || fail "$kind: the windowed replay took $mb MB (bound $replay_bound MB)"
}

# Bounds: import is flat in the rows (a row at a time; the trace's index in a temporary file).
# A window's run plans only the window's exchanges (replay/planner.hpp: the rest are read past):
# before, it planned every row, ~150 bytes each (214 MB for BurstGPT's 93-request window). What
# is left grows with the rows through the reader alone: it reads the trace's index at the end of
# each pass, ~60 bytes an exchange with its frame while it is parsed (98 MB here; a reader option
# to read past it is the next step, bench/RESULTS.md "Huge counts, windows and merge --trace").
public_trace mooncake "$WORK/mooncake_trace.jsonl" 1800 1830 10 64 64
public_trace burstgpt "$WORK/BurstGPT_1.csv" 2592000 2592300 50 64 128

# merge --trace over the 1.4M-row trace: two shards of 20 requests each, merged with the source
# named, which merge streams (before: loaded whole, ~690 MB at this size).
for shard in 0 1; do
  "$RETRACE" replay "$WORK/burstgpt.rtrace" --target "$SIM_URL" --out "$WORK/shard$shard.rtrace" -c 4 \
    --limit 20 --shard $shard/2 >/dev/null 2>"$WORK/shard$shard.err" || { cat "$WORK/shard$shard.err" >&2; fail "shard $shard"; }
done
mb=$(peak_rss_mb "$WORK/merge.out" "$WORK/merge.err" "$RETRACE" merge "$WORK/shard0.rtrace" "$WORK/shard1.rtrace" \
  --trace "$WORK/burstgpt.rtrace" --out "$WORK/merged.rtrace")
echo "merge --trace of the $(jq .kept "$WORK/burstgpt.want.json")-exchange source: $mb MB peak RSS"
check_eq "$("$RETRACE" export "$WORK/merged.rtrace" | jq -c 'select(.exchange)' | wc -l)" 40 "the merged run holds both shards"
if grep -q "missing" "$WORK/merge.out" "$WORK/merge.err"; then cat "$WORK/merge.out" "$WORK/merge.err" >&2; fail "merge --trace found exchanges missing"; fi
(( mb <= 128 )) || fail "merge --trace took $mb MB (bound 128 MB: the source's index, as above)"
echo ok
