#!/usr/bin/env bash
# study with --target given twice: the whole matrix against each of two `retrace serve` instances
# (one with --batch-variance, one without), the same requests, each target in its own
# sub-directory; the price-of-repeatability table's numbers must be the targets' own cell
# summaries, the across-target count what `retrace diff` says of the two baselines. An interrupted
# two-target study resumes where it stopped; a target given twice is refused.
. "$(dirname "$0")/lib.sh"

json() { node -e "const s=JSON.parse(require('fs').readFileSync(process.argv[1],'utf8')); console.log($2)" "$1"; }

"$RETRACE" import "$ROOT/traces/open-ended.jsonl" --out "$WORK/open.rtrace" 2>/dev/null
start_listening PLAIN "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off
start_listening BATCHED "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off --batch-variance

# 1. Two targets, concurrency 1 and 16, cold, two repeats: the batch-variant one differs under load.
status=0
"$RETRACE" study "$WORK/open.rtrace" --target "$PLAIN_URL" --target "$BATCHED_URL" --limit 20 -c 1,16 --cache cold \
  --repeat 2 --token-ids logprobs --out "$WORK/two" >"$WORK/two.out" 2>"$WORK/two.err" || status=$?
[[ $status == 1 ]] || { cat "$WORK/two.err" >&2; fail "two targets: exit $status, want 1 (the batch-variant target differs)"; }
for f in target-1/summary.json target-2/summary.json target-1/baseline.rtrace target-2/c16-cold-r2.rtrace \
  summary.json summary.md summary.csv report.html study.json; do
  [[ -f "$WORK/two/$f" ]] || fail "study did not write $f"
done
[[ ! -f "$WORK/two/baseline.rtrace" ]] || fail "a two-target study keeps its runs in the targets' directories"
check_eq "$(json "$WORK/two/study.json" 's.targets.join(" ")')" "$PLAIN_URL $BATCHED_URL" "study.json records the targets in order"
check_eq "$(json "$WORK/two/target-2/study.json" 's.targets.join(" ")')" "$BATCHED_URL" "a target's own study.json names it alone"
S="$WORK/two/summary.json"
check_eq "$(json "$S" 's.price_of_repeatability.map(r=>r.target+":"+r.cell).join()')" "1:c1 cold,1:c16 cold,2:c1 cold,2:c16 cold" \
  "the price table: a row per target and cell, in order"
# Every number of a row is the target's own cell summary: throughput mean and interval, counts, bound.
for t in 1 2; do
  check_eq "$(node -e "
    const fs=require('fs');
    const top=JSON.parse(fs.readFileSync('$S','utf8'));
    const own=JSON.parse(fs.readFileSync('$WORK/two/target-$t/summary.json','utf8'));
    const pick=c=>JSON.stringify([c.requests_per_s,c.output_tokens_per_s,c.compared,c.differing,c.differing_rate_upper95,c.first_diverging_part]);
    const rows=top.price_of_repeatability.filter(r=>r.target==$t);
    console.log(rows.length==own.cells.length && rows.every((r,i)=>r.cell==own.cells[i].name && pick(r)==pick(own.cells[i])));")" \
    "true" "target $t's rows equal its own summary.json cells"
done
check_eq "$(json "$S" 's.price_of_repeatability.map(r=>r.compared).join()')" "40,40,40,40" "each cell compares 2 runs of 20 outputs"
check_eq "$(json "$S" 's.price_of_repeatability.filter(r=>r.target==1).map(r=>r.differing).join()')" "0,0" \
  "the plain server's outputs never differ from its baseline"
(( $(json "$S" 's.price_of_repeatability[3].differing') > 0 )) || fail "the batch-variant target at c16 shows no difference"
check_eq "$(json "$S" 's.price_of_repeatability.every(r=>r.requests_per_s.samples==2 && r.requests_per_s.ci95_low<=r.requests_per_s.mean && r.requests_per_s.mean<=r.requests_per_s.ci95_high)')" \
  "true" "throughput: the mean of two repeats within its interval"
check_eq "$(json "$S" 's.targets.map(t=>t.summary.server.kind+"@"+t.url).join(" ")')" "retrace-serve@$PLAIN_URL retrace-serve@$BATCHED_URL" \
  "each target as the preflight identified it"
# Across targets: target 2's baseline against target 1's, as retrace diff sees the same two files.
diff_status=0
"$RETRACE" diff "$WORK/two/target-1/baseline.rtrace" "$WORK/two/target-2/baseline.rtrace" --json >"$WORK/across.json" || diff_status=$?
(( diff_status <= 1 )) || fail "retrace diff of the two baselines: exit $diff_status"
check_eq "$(json "$S" 's.across_targets.map(a=>a.target+":"+a.compared+"/"+a.differing).join()')" \
  "$(json "$WORK/across.json" '"2:"+(s.runs[0].identical+s.runs[0].divergent)+"/"+s.runs[0].divergent')" \
  "the across-target count is retrace diff's"
# The Markdown: the scope names both targets as identified; the table's rows carry the same numbers.
M="$WORK/two/summary.md"
check_contains "$M" "**Scope.** This study sent the same requests to 2 targets: target 1, \`retrace-sim\` as the server named it, served by retrace-serve" \
  "the scope names the first target as identified"
check_contains "$M" "at $PLAIN_URL, with the prompt cache cold" "the scope names the first target's URL and cache state"
check_contains "$M" "; target 2, \`retrace-sim\` as the server named it, served by retrace-serve" "the scope names the second target"
check_contains "$M" "at $BATCHED_URL, with the prompt cache cold" "the scope names the second target's URL"
check_contains "$M" "Across targets, the baseline outputs of target 2 against target 1's: $(json "$S" 's.across_targets[0].differing') of 20 differed" \
  "the scope bounds the across-target rate"
check_contains "$M" "## Price of repeatability" "summary.md has the price table"
row=$(json "$S" '(()=>{const r=s.price_of_repeatability[3];return "| c16 cold | "+r.requests_per_s.mean.toFixed(1)+" ("+r.requests_per_s.ci95_low.toFixed(1)+"–"+r.requests_per_s.ci95_high.toFixed(1)+") | "})()')
check_contains "$M" "$row" "the c16 row of target 2 shows its throughput and interval"
check_contains "$M" "$(json "$S" '"| "+s.price_of_repeatability[3].differing+" of 40 ("')" "the c16 row shows its count of differing outputs"
check_contains "$WORK/two.out" "## Price of repeatability" "the price table is printed"
check_eq "$(grep -c . "$WORK/two/summary.csv")" "5" "summary.csv: a header and a row per target and cell"
check_eq "$(tail -1 "$WORK/two/summary.csv" | cut -d, -f1,2,8)" "2,$BATCHED_URL,c16 cold" "summary.csv's last row: target 2's c16 cell"
check_contains "$WORK/two/report.html" 'id="price"' "report.html has the price table"
check_contains "$WORK/two/report.html" "<td>target 2 (retrace-serve" "report.html names the targets"
"$RETRACE" report "$WORK/two" -o "$WORK/two-again.html" >/dev/null || fail "retrace report on a two-target study"
check_contains "$WORK/two-again.html" 'id="across"' "retrace report shows the targets compared"

# 2. One target keeps the flat layout, and its study.json names it.
"$RETRACE" study "$WORK/open.rtrace" --target "$PLAIN_URL" --limit 2 -c 1 --cache cold --repeat 1 \
  --out "$WORK/one" >/dev/null 2>"$WORK/one.err" || { cat "$WORK/one.err" >&2; fail "one target"; }
[[ -f "$WORK/one/baseline.rtrace" && ! -d "$WORK/one/target-1" ]] || fail "one target: runs in the study's directory"
check_eq "$(json "$WORK/one/summary.json" '"price_of_repeatability" in s')" "false" "one target: no price table"

# 3. The same target twice is refused before anything is written.
status=0
"$RETRACE" study "$WORK/open.rtrace" --target "$PLAIN_URL" --target "$PLAIN_URL/" --out "$WORK/dup" 2>"$WORK/dup.err" || status=$?
check_eq "$status" "2" "a target given twice"
check_contains "$WORK/dup.err" "is given twice" "the refusal says why"
[[ ! -e "$WORK/dup" ]] || fail "a refused study wrote its directory"

# 4. Interrupted in its second target, a study resumes: the first target's finished runs are kept,
# the second's continue. The second server is slow enough to be mid-run when the signal comes.
start_listening SLOW "$RETRACE" serve --listen 127.0.0.1:0 --decode-step-ms 20
"$RETRACE" study "$WORK/open.rtrace" --target "$PLAIN_URL" --target "$SLOW_URL" --limit 4 --set max_tokens=16 \
  -c 1,2 --cache cold --repeat 1 --out "$WORK/cut" >"$WORK/cut.out" 2>"$WORK/cut.err" &
study_pid=$!
_PIDS+=("$study_pid")
wait_for_line "$WORK/cut.err" "study: target 2 of 2" "$study_pid"
kill -INT "$study_pid"
status=0
wait "$study_pid" || status=$?
check_eq "$status" "2" "a two-target study stopped by SIGINT"
check_contains "$WORK/cut.err" "continue with: retrace study --resume $WORK/cut" "the stopped study says how to go on"
[[ -f "$WORK/cut/target-1/summary.json" && ! -f "$WORK/cut/summary.json" ]] || fail "stopped in target 2: target 1 done, the study not"
before=$(md5sum <"$WORK/cut/target-1/baseline.rtrace")
status=0
"$RETRACE" study --resume "$WORK/cut" >"$WORK/resume.out" 2>"$WORK/resume.err" || status=$?
(( status <= 1 )) || { cat "$WORK/resume.err" >&2; fail "resume: exit $status"; }
check_contains "$WORK/resume.err" "study: 3 of 3 runs already done; continuing" "target 1 is not run again"
check_eq "$(md5sum <"$WORK/cut/target-1/baseline.rtrace")" "$before" "target 1's baseline is kept as it was"
check_eq "$(json "$WORK/cut/summary.json" 's.price_of_repeatability.map(r=>r.target+":"+r.cell+":"+r.compared).join()')" \
  "1:c1 cold:4,1:c2 cold:4,2:c1 cold:4,2:c2 cold:4" "the resumed study summarizes both targets' cells"
check_eq "$(json "$WORK/cut/target-2/plan.json" 's.runs.every(r=>r.status=="done")')" "true" "every run of target 2 finished"
status=0; "$RETRACE" study --resume "$WORK/cut" --target "$PLAIN_URL" 2>"$WORK/resume-bad.err" || status=$?
check_eq "$status" "2" "--resume with --target"
echo "ok"
