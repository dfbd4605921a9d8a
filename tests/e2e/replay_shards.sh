#!/usr/bin/env bash
# release-only: four replay processes and a merge (36 s under ASan); under the sanitizers the shard and merge arithmetic runs in shard_test and each replay path in the other e2e.replay_* tests
# A cluster simulated on loopback: one `retrace serve`, four `retrace replay --shard i/4` processes
# started together through --start-at, joined by `retrace merge`. The merged run diffs identical to
# an unsharded run at the same total concurrency, holds every exchange exactly once, and keeps the
# whole trace's open-loop arrival times; merge refuses what is not one run's shards; a shard
# killed mid-run is merged with what it has and its missing exchanges are reported (exit 1).
. "$(dirname "$0")/lib.sh"

start_listening SIM "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off
"$RETRACE" import "$ROOT/traces/gold-intents.jsonl" --out "$WORK/gold.rtrace" >/dev/null
ex() { "$RETRACE" export "$1" | jq -c 'select(.exchange) | .exchange'; }
header() { "$RETRACE" export "$1" | jq -c 'select(.header) | .header'; }
FLAGS=(--target "$SIM_URL" --set max_tokens=12 --set temperature=0)

# run_shards NAME START_AT ARGS...: the four shards in parallel; fails unless each exits 0.
run_shards() {
  local name=$1 start=$2 i pids=()
  shift 2
  for i in 0 1 2 3; do
    "$RETRACE" replay "$WORK/gold.rtrace" "${FLAGS[@]}" --out "$WORK/$name$i.rtrace" --shard "$i/4" \
      --start-at "$start" "$@" >"$WORK/$name$i.out" 2>"$WORK/$name$i.err" &
    pids+=($!)
  done
  for i in 0 1 2 3; do
    wait "${pids[$i]}" || { cat "$WORK/$name$i.err" >&2; fail "shard $i/4 ($name) exited non-zero"; }
  done
}

# --- closed loop: 4 shards at -c 1 against one run at -c 4.
"$RETRACE" replay "$WORK/gold.rtrace" "${FLAGS[@]}" --out "$WORK/whole.rtrace" -c 4 >/dev/null
run_shards c "$(( $(date +%s) + 4 ))" -c 1
"$RETRACE" merge "$WORK"/c{0,1,2,3}.rtrace -o "$WORK/merged.rtrace" >"$WORK/merge.out" \
  || fail "merge of four complete shards exited non-zero"
check_contains "$WORK/merge.out" "merged 20 exchanges from 4 shards" "merge summary"
check_contains "$WORK/merge.out" "total concurrency 4" "total concurrency in the summary"
# The server's /metrics series is kept: the first shard's, as many scrapes as it took.
"$RETRACE" export --metrics "$WORK/merged.rtrace" >"$WORK/merged.series" 2>/dev/null || fail "export --metrics of the merge"
"$RETRACE" export --metrics "$WORK/c0.rtrace" >"$WORK/c0.series" 2>/dev/null || fail "export --metrics of shard 0"
[[ -s "$WORK/merged.series" ]] || fail "the merge dropped the series"
check_eq "$(grep -c '"series":"running"' "$WORK/merged.series")" "$(grep -c '"series":"running"' "$WORK/c0.series")" \
  "the merge keeps the first shard's scrapes"
"$RETRACE" diff "$WORK/whole.rtrace" "$WORK/merged.rtrace" >"$WORK/diff.out" \
  || { cat "$WORK/diff.out" >&2; fail "the merged run differs from the unsharded one"; }
ex "$WORK/merged.rtrace" >"$WORK/merged.jsonl"
ex "$WORK/whole.rtrace" >"$WORK/whole.jsonl"
check_eq "$(wc -l <"$WORK/merged.jsonl")" 20 "exchanges in the merged run"
check_eq "$(jq -r .source_id "$WORK/merged.jsonl" | sort -n | uniq | wc -l)" 20 "distinct source ids"
check_eq "$(jq -r .id "$WORK/merged.jsonl" | sort -n | tr '\n' ' ')" "$(seq 0 19 | tr '\n' ' ')" "merged ids"
check_eq "$(jq -r '[.source_id, .key] | @tsv' "$WORK/merged.jsonl" | sort -n | md5sum)" \
  "$(jq -r '[.source_id, .key] | @tsv' "$WORK/whole.jsonl" | sort -n | md5sum)" "request keys by source id"
check_eq "$(jq -r '.labels.concurrency' "$WORK/merged.jsonl" | sort -u)" 4 "concurrency label of merged exchanges"
header "$WORK/merged.rtrace" | jq '.settings | fromjson' >"$WORK/merged.settings"
check_eq "$(jq -r '.schedule.concurrency, .schedule.concurrency_per_shard' "$WORK/merged.settings" | tr '\n' ' ')" "4 1 " "merged schedule"
check_eq "$(jq -r '.shards | map(.index) | @csv' "$WORK/merged.settings")" "0,1,2,3" "shards in the header"
check_eq "$(jq -r '.shards[].start_at' "$WORK/merged.settings" | sort -u | wc -l)" 1 "one common start"
check_eq "$(jq -r '.shards[] | select(.clock_offset_ns == null or .host == "") | .index' "$WORK/merged.settings")" "" "every shard's host and clock offset"
"$RETRACE" stats "$WORK/merged.rtrace" --json >"$WORK/stats.json"
check_eq "$(jq -r .completed "$WORK/stats.json")" 20 "stats of the merged run"
"$RETRACE" report "$WORK/merged.rtrace" -o "$WORK/merged.html" >/dev/null 2>&1 || fail "report of the merged run"
check_contains "$WORK/merged.html" "<svg" "report of the merged run has charts"

# --- --requests N per shard: the merged run says the total it sent, and --stats reports it.
run_shards q "$(( $(date +%s) + 4 ))" -c 1 --requests 6
"$RETRACE" merge "$WORK"/q{0,1,2,3}.rtrace -o "$WORK/qmerged.rtrace" --stats >"$WORK/qmerge.out" \
  || fail "merge --stats of four complete shards exited non-zero"
check_contains "$WORK/qmerge.out" "schedule concurrency 4, 4 shards, 24 requests" "the merged run's schedule line"
check_contains "$WORK/qmerge.out" "clock offsets spread" "the spread of the shards' clock offsets"
grep -qE '^  completed +24$' "$WORK/qmerge.out" || fail "merge --stats: no 'completed 24' in $WORK/qmerge.out"
header "$WORK/qmerged.rtrace" | jq '.settings | fromjson' >"$WORK/qmerged.settings"
check_eq "$(jq -r '.requests, .requests_per_shard, (.clock_offset_spread_ns >= 0)' "$WORK/qmerged.settings" | tr '\n' ' ')" \
  "24 6 true " "the merged run's requests and clock spread"

# --- a shard that began 0.3 s late (within --start-at's 1 s tolerance): merge warns.
late_start=$(python3 -c 'import time; print(f"{time.time() - 0.3:.3f}")')
"$RETRACE" replay "$WORK/gold.rtrace" "${FLAGS[@]}" --out "$WORK/late1.rtrace" -c 1 --limit 4 \
  --shard 1/2 --start-at "$late_start" >/dev/null 2>"$WORK/late1.err" || { cat "$WORK/late1.err" >&2; fail "the late shard"; }
"$RETRACE" replay "$WORK/gold.rtrace" "${FLAGS[@]}" --out "$WORK/late0.rtrace" -c 1 --limit 4 \
  --shard 0/2 --start-at "$(( $(date +%s) + 2 ))" >/dev/null 2>"$WORK/late0.err" || { cat "$WORK/late0.err" >&2; fail "the timely shard"; }
"$RETRACE" merge "$WORK"/late{0,1}.rtrace -o "$WORK/late.merged.rtrace" >/dev/null 2>"$WORK/latemerge.err" \
  || fail "merge of a late shard exited non-zero"
check_contains "$WORK/latemerge.err" "warning: the shards began" "the warning about the shards' clock spread"

# --- open loop: the shards keep the whole trace's arrival process (same seed, same times).
"$RETRACE" replay "$WORK/gold.rtrace" "${FLAGS[@]}" --out "$WORK/rate.rtrace" --rate 40 --seed 7 >/dev/null
run_shards r "$(( $(date +%s) + 4 ))" --rate 40 --seed 7
"$RETRACE" merge "$WORK"/r{3,1,0,2}.rtrace -o "$WORK/rmerged.rtrace" >/dev/null || fail "merge of the rate shards"
check_eq "$(ex "$WORK/rmerged.rtrace" | jq -r '[.source_id, .intended_send_ns] | @tsv' | sort -n | md5sum)" \
  "$(ex "$WORK/rate.rtrace" | jq -r '[.source_id, .intended_send_ns] | @tsv' | sort -n | md5sum)" \
  "intended send times of the merged shards vs the unsharded run"
"$RETRACE" diff "$WORK/rate.rtrace" "$WORK/rmerged.rtrace" >/dev/null || fail "merged rate run differs"

# --- refusals: nothing is written, exit 2, the reason named.
refused() {  # refused WHAT TEXT ARGS...
  local what=$1 text=$2 status=0
  shift 2
  "$RETRACE" merge "$@" -o "$WORK/refused.rtrace" 2>"$WORK/refused.err" >/dev/null || status=$?
  check_eq "$status" 2 "exit status of merge with $what"
  check_contains "$WORK/refused.err" "$text" "$what"
  [[ ! -e "$WORK/refused.rtrace" ]] || fail "merge with $what wrote its output"
}
# Shards that never started: the others are merged, the absent ones named; exit 1, 0 when allowed.
status=0
"$RETRACE" merge "$WORK/c0.rtrace" "$WORK/c2.rtrace" --trace "$WORK/gold.rtrace" -o "$WORK/absent.rtrace" \
  >/dev/null 2>"$WORK/absent.err" || status=$?
check_eq "$status" 1 "exit status of merge with shards that never started"
check_contains "$WORK/absent.err" "shard 1/4 left no output" "the first absent shard is named"
check_contains "$WORK/absent.err" "shard 3/4 left no output (it never started, or its file is not among those given): its" \
  "the second absent shard is named with its count"
check_eq "$(ex "$WORK/absent.rtrace" | wc -l)" "$(( $(ex "$WORK/c0.rtrace" | wc -l) + $(ex "$WORK/c2.rtrace" | wc -l) ))" \
  "the shards that exist are merged"
"$RETRACE" merge "$WORK/c0.rtrace" "$WORK/c2.rtrace" --allow-missing -o "$WORK/absent-ok.rtrace" >/dev/null 2>&1 \
  || fail "merge --allow-missing with shards that never started exits 0"
refused "a duplicate shard" "shard 2/4 is given twice" "$WORK"/c{0,1,2,3}.rtrace "$WORK/c2.rtrace"
refused "shards of two runs" "differ in: schedule" "$WORK"/c{0,1}.rtrace "$WORK"/r{2,3}.rtrace
refused "an unsharded run" "is a whole replay (--shard 0/1), not one shard of several: it needs no merge" "$WORK/whole.rtrace"
"$RETRACE" merge "$WORK"/c{0,1,2,3}.rtrace -o "$WORK/merged.rtrace" 2>"$WORK/force.err" >/dev/null \
  && fail "merge overwrote an existing output without --force"
check_contains "$WORK/force.err" "--force" "an existing output"
if "$RETRACE" replay "$WORK/gold.rtrace" "${FLAGS[@]}" --out "$WORK/late.rtrace" -c 1 \
     --start-at "$(( $(date +%s) - 60 ))" 2>"$WORK/late.err"; then
  fail "a --start-at a minute ago was accepted"
fi
check_contains "$WORK/late.err" "in the past" "a late --start-at"
[[ ! -e "$WORK/late.rtrace" ]] || fail "a late --start-at wrote a trace"

# --- Ctrl-C while waiting for the start: exit 130 at once, a readable trace of nothing sent.
"$RETRACE" replay "$WORK/gold.rtrace" "${FLAGS[@]}" --out "$WORK/wait.rtrace" -c 1 --shard 0/4 \
  --start-at "$(( $(date +%s) + 600 ))" >/dev/null 2>"$WORK/wait.err" &
waiting=$!
_PIDS+=("$waiting")
wait_for_line "$WORK/wait.err" "waiting (Ctrl-C stops)" "$waiting"
kill -INT "$waiting"
status=0
wait "$waiting" || status=$?
check_eq "$status" 130 "exit status of Ctrl-C before the start"
check_eq "$(ex "$WORK/wait.rtrace" | wc -l)" 0 "exchanges sent before the start"

# --- a shard killed mid-run: constant arrivals at 2/s put shard 1's five sends 2 s apart; it is
# killed once its first exchange is on disk (the writer closes a frame when one is 1 s old).
start=$(( $(date +%s) + 4 ))
pids=()
for i in 0 1 2 3; do
  "$RETRACE" replay "$WORK/gold.rtrace" "${FLAGS[@]}" --out "$WORK/k$i.rtrace" --shard "$i/4" \
    --start-at "$start" --rate 2 --arrival constant >/dev/null 2>"$WORK/k$i.err" &
  pids+=($!)
done
_PIDS+=("${pids[@]}")
on_disk=0
for attempt in $(seq 1 300); do
  [[ -f "$WORK/k1.rtrace.partial" ]] && \
    (( $("$RETRACE" export "$WORK/k1.rtrace.partial" 2>/dev/null | grep -c '"exchange"' || true) > 0 )) && { on_disk=1; break; }
  kill -0 "${pids[1]}" 2>/dev/null || fail "shard 1 ended before its first exchange was on disk"
  sleep 0.1
done
(( on_disk )) || fail "shard 1 wrote no exchange to disk within 30 s"
kill -KILL "${pids[1]}"
wait "${pids[1]}" 2>/dev/null || true
for i in 0 2 3; do wait "${pids[$i]}" || fail "shard $i/4 exited non-zero"; done
present=$("$RETRACE" export "$WORK/k1.rtrace.partial" 2>/dev/null | grep -c '"exchange"' || true)
(( present >= 1 && present < 5 )) || fail "the killed shard holds $present of its 5 exchanges"
status=0
"$RETRACE" merge "$WORK"/k{0,2,3}.rtrace "$WORK/k1.rtrace.partial" -o "$WORK/kmerged.rtrace" \
  >"$WORK/kmerge.out" 2>"$WORK/kmerge.err" || status=$?
check_eq "$status" 1 "exit status of a merge with exchanges missing"
check_contains "$WORK/kmerge.err" "is missing $(( 5 - present )) of its 5 exchanges" "missing exchanges of shard 1"
check_contains "$WORK/kmerge.err" "$(( 5 - present )) exchanges missing" "missing total"
check_eq "$(ex "$WORK/kmerged.rtrace" | wc -l)" "$(( 15 + present ))" "exchanges in the merge with a killed shard"
# With the source trace, the missing ones are named: shard 1's selection is the input's exchanges
# 2, 6, 10, 14 and 18 (counting from 1), sent in that order at constant arrivals, so the last
# 5 - present are missing.
mapfile -t ids < <(ex "$WORK/gold.rtrace" | jq -r .id | sed -n '2p;6p;10p;14p;18p')
missing_ids=$(IFS=,; echo "${ids[*]:present}" | sed 's/,/, /g')
status=0
"$RETRACE" merge "$WORK"/k{0,2,3}.rtrace "$WORK/k1.rtrace.partial" -o "$WORK/kmerged2.rtrace" \
  --trace "$WORK/gold.rtrace" >/dev/null 2>"$WORK/kmerge2.err" || status=$?
check_eq "$status" 1 "exit status of a merge with --trace and exchanges missing"
check_contains "$WORK/kmerge2.err" "exchanges: source ids $missing_ids" "missing source ids"
# A directory of shard outputs stands for its *.rtrace and the .partial of a shard that left none.
mkdir "$WORK/kdir"
cp "$WORK"/k{0,2,3}.rtrace "$WORK/k1.rtrace.partial" "$WORK/kdir/"
cp "$WORK/k0.rtrace" "$WORK/kdir/k0.rtrace.partial"  # a stale .partial beside its shard's output
echo "shard log" >"$WORK/kdir/k1.log"
status=0
"$RETRACE" merge "$WORK/kdir" -o "$WORK/kmerged3.rtrace" --trace "$WORK/gold.rtrace" >"$WORK/kmerge3.out" \
  2>"$WORK/kmerge3.err" || status=$?
check_eq "$status" 1 "exit status of a merge of a directory with a killed shard's .partial"
check_contains "$WORK/kmerge3.err" "exchanges: source ids $missing_ids" "missing source ids from a directory"
check_contains "$WORK/kmerge3.out" "merged $(( 15 + present )) exchanges from 4 shards" "a directory's shards"
"$RETRACE" merge "$WORK"/k{0,2,3}.rtrace "$WORK/k1.rtrace.partial" -o "$WORK/kmerged.rtrace" --force \
  --allow-missing >/dev/null 2>&1 || fail "--allow-missing still exited non-zero"

stop "$SIM_PID" || fail "serve exited non-zero"
echo "replay_shards: ok"
