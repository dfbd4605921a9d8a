#!/usr/bin/env bash
# deploy/slurm/replay-shards.sbatch on a real one-node Slurm cluster (tests/slurm/lib.sh) of 2 CPUs
# with WaitTime=2 in slurm.conf, submitted as docs/scale-out.md's line says (4 shards, --overcommit) against
# `retrace serve`: the merged run diffs identical to an unsharded one; a second submission in the
# same directory writes a run of its own and leaves the first alone; a shard killed mid-run makes
# the job exit 1 with its missing exchanges named while the others run to their end (srun
# --wait=0: WaitTime would have killed them 2 s later); a cancelled job's log says how to merge
# what its shards wrote, and that line, run as printed, merges them.
. "$(dirname "$0")/lib.sh"

start_slurm 2 WaitTime=2
start_listening SIM "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off
SUBMIT="$WORK/submit"  # the shared directory docs/scale-out.md has users submit from
mkdir -p "$SUBMIT" "$WORK/bin"
ln -s "$RETRACE" "$WORK/bin/retrace"  # "retrace on PATH on every node"
export PATH="$WORK/bin:$PATH"
export START_LEAD=8  # the guide's knob (30 s by default): enough for a loaded 2-core CI machine
cd "$SUBMIT"
"$RETRACE" import "$ROOT/traces/gold-intents.jsonl" --out prod.rtrace >/dev/null
FLAGS=(--target "$SIM_URL" --set max_tokens=12 --set temperature=0)
ex() { "$RETRACE" export "$1" | jq -c 'select(.exchange) | .exchange'; }

# --- the guide's submission: every shard starts, the merge is the unsharded run.
"$RETRACE" replay prod.rtrace "${FLAGS[@]}" -c 4 --out "$WORK/whole.rtrace" >/dev/null
# docs/scale-out.md's line, its options as written there (4 shards on this 2-CPU node: --overcommit).
read -ra readme_line < <(grep -m1 -oE '^sbatch [^<]*replay-shards.sbatch' "$ROOT/docs/scale-out.md")
check_eq "${readme_line[*]}" "sbatch --ntasks=4 --overcommit deploy/slurm/replay-shards.sbatch" "docs/scale-out.md's sbatch line"
job1=$(sbatch --parsable "${readme_line[@]:1:${#readme_line[@]}-2}" "$ROOT/deploy/slurm/replay-shards.sbatch" prod.rtrace \
         "${FLAGS[@]}" -c 1) || fail "sbatch refused the shipped script"
check_eq "$(wait_for_job "$job1" 120)" 0 "exit code of job $job1"
run1="retrace-run-$job1"
for i in 0 1 2 3; do [[ -s "$run1/shards/shard-$i.rtrace" ]] || fail "job $job1 wrote no $run1/shards/shard-$i.rtrace"; done
check_contains "retrace-replay-$job1.log" "merged 20 exchanges from 4 shards into $run1/run.rtrace" "the job's merge"
grep -qE '^  completed +20$' "retrace-replay-$job1.log" || fail "the job's stats of the merged run: no 'completed 20'"
"$RETRACE" diff "$WORK/whole.rtrace" "$run1/run.rtrace" >"$WORK/diff.out" \
  || { cat "$WORK/diff.out" >&2; fail "the merged run of job $job1 differs from the unsharded run"; }
# The arguments after the trace reached replay (-c 1 per shard: 4 in all; the --set values).
"$RETRACE" export "$run1/run.rtrace" | jq -c 'select(.header) | .header.settings | fromjson' >"$WORK/run1.settings"
check_eq "$(jq -r '.schedule.concurrency_per_shard, .set.max_tokens' "$WORK/run1.settings" | tr '\n' ' ')" "1 12 " \
  "replay arguments passed through"
tree_sum() { (cd "$1" && find . -type f -exec md5sum {} + | sort | md5sum); }
sum1=$(tree_sum "$run1")

# --- a second submission in the same directory, at a rate, with shard 2 killed mid-run once its
# first exchange is on disk (constant arrivals at 2/s: shard 2 sends every 2 s).
job2=$(sbatch --parsable --ntasks=4 --overcommit "$ROOT/deploy/slurm/replay-shards.sbatch" prod.rtrace \
         "${FLAGS[@]}" --rate 2 --arrival constant) || fail "sbatch refused the second submission"
run2="retrace-run-$job2"
partial="$run2/shards/shard-2.rtrace.partial"
on_disk=0
for _ in $(seq 1 600); do
  if [[ -f "$partial" ]] && (( $("$RETRACE" export "$partial" 2>/dev/null | grep -c '"exchange"' || true) > 0 )); then
    on_disk=1; break
  fi
  [[ "$(job_state "$job2")" =~ ^(PENDING|RUNNING|CONFIGURING)$ ]] || fail "job $job2 ended before shard 2 wrote an exchange"
  sleep 0.1
done
(( on_disk )) || fail "shard 2 of job $job2 wrote no exchange within 60 s"
# The task's process, as Slurm lists it: step 0, global task id 2.
pid=$(scontrol listpids "$job2" | awk '$3 == 0 && $5 == 2 { print $1; exit }')
[[ -n "$pid" && "$(cat /proc/"$pid"/comm 2>/dev/null)" == retrace ]] || fail "no retrace process for shard 2 of job $job2"
kill -KILL "$pid"
check_eq "$(wait_for_job "$job2" 120)" 1 "exit code of job $job2 with a killed shard"
log2="retrace-replay-$job2.log"
present=$("$RETRACE" export "$partial" 2>/dev/null | grep -c '"exchange"' || true)
(( present >= 1 && present < 5 )) || fail "the killed shard holds $present of its 5 exchanges"
# Shard 2's selection is the input's exchanges 3, 7, 11, 15 and 19 (counting from 1), sent in
# that order: the last 5 - present are missing, named by source id.
mapfile -t ids < <(ex prod.rtrace | jq -r .id | sed -n '3p;7p;11p;15p;19p')
missing_ids=$(IFS=,; echo "${ids[*]:present}" | sed 's/,/, /g')
check_contains "$log2" "shard 2/4 ($partial) is missing $(( 5 - present )) of its 5 exchanges: source ids $missing_ids" \
  "the killed shard's missing exchanges, named"
check_contains "$log2" "merged $(( 15 + present )) exchanges from 4 shards into $run2/run.rtrace" "the merge of what the shards left"
grep -qE "^  completed +$(( 15 + present ))\$" "$log2" || fail "the job's stats after a merge with exchanges missing"
"$RETRACE" export "$run2/run.rtrace" | jq -c 'select(.header) | .header.settings | fromjson' >"$WORK/run2.settings"
check_eq "$(jq -r .schedule.kind "$WORK/run2.settings")" rate "the second job's merged run is its own"
check_eq "$(tree_sum "$run1")" "$sum1" "the first job's run directory after the second job"

# --- a cancelled job: the shards' files stay and the log says how to merge them; run as printed,
# that line merges what the shards wrote (exit 0: --allow-missing).
job3=$(sbatch --parsable --ntasks=4 --overcommit "$ROOT/deploy/slurm/replay-shards.sbatch" prod.rtrace \
         "${FLAGS[@]}" --rate 1 --arrival constant) || fail "sbatch refused the third submission"
run3="retrace-run-$job3"
started=0
for _ in $(seq 1 600); do
  partials=("$run3"/shards/*.rtrace.partial)
  [[ ${#partials[@]} == 4 && -e "${partials[0]}" ]] && { started=1; break; }
  [[ "$(job_state "$job3")" =~ ^(PENDING|RUNNING|CONFIGURING)$ ]] || fail "job $job3 ended before its shards started"
  sleep 0.1
done
(( started )) || fail "the shards of job $job3 wrote no file within 60 s"
scancel "$job3"
wait_for_job "$job3" 120 >/dev/null
log3="retrace-replay-$job3.log"
for _ in $(seq 1 100); do grep -q "retrace merge" "$log3" 2>/dev/null && break; sleep 0.1; done
check_contains "$log3" "replay-shards: cancelled; the shards wrote what they had into $run3/shards" "the cancelled job's log"
merge_line=$(grep -m1 '^  retrace merge ' "$log3") || fail "the cancelled job's log has no merge line"
check_eq "$merge_line" "  retrace merge $run3/shards --trace prod.rtrace -o $run3/run.rtrace --allow-missing --stats" \
  "the merge line the log prints"
eval "$merge_line" >"$WORK/merge3.out" 2>&1 || { cat "$WORK/merge3.out" >&2; fail "the printed merge line"; }
check_contains "$WORK/merge3.out" "shards into $run3/run.rtrace" "the cancelled job's shards merged"

stop "$SIM_PID" || fail "serve exited non-zero"
echo "sharded_replay: ok"
