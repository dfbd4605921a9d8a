#!/usr/bin/env bash
# study against `retrace serve`: the cells and the control, the bound in the scope paragraph, the
# cached tokens of cold and warm cells. A plain server gives no differences (exit 0); with
# --cache-variance only the warm cells differ (exit 1); with --batch-variance only the loaded
# cells do. The summary's counts must equal `retrace diff --json` on the same run files.
. "$(dirname "$0")/lib.sh"

# The 95 % upper bound after 0 of n, in closed form (1 - 0.05^(1/n)), as the scope prints it.
zero_bound() { node -e "const p=(1-Math.pow(0.05,1/$1))*100; console.log((p<1?p.toFixed(2):p.toFixed(1))+' %')"; }

"$RETRACE" import "$ROOT/traces/open-ended.jsonl" --out "$WORK/open.rtrace" 2>/dev/null
study() {  # study NAME URL ARGS...: exit status in $status
  local name=$1 url=$2; shift 2
  status=0
  "$RETRACE" study "$WORK/open.rtrace" --target "$url" --limit "${LIMIT:-6}" --token-ids logprobs --out "$WORK/$name" \
    "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" || status=$?
}

# 1. A plain server: nothing differs anywhere; the scope bounds the rate and says "not zero".
start_listening PLAIN "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off
study plain "$PLAIN_URL" -c 1,4 --cache cold,warm --repeat 2
[[ $status == 0 ]] || { cat "$WORK/plain.err" >&2; fail "plain server: exit $status, want 0"; }
for f in plan.json study.json baseline.rtrace c1-cold-r1.rtrace c4-warm-r2.rtrace summary.json summary.md summary.csv exchanges.csv report.html; do
  [[ -f "$WORK/plain/$f" ]] || fail "study did not write $f"
  check_eq "$(stat -c %a "$WORK/plain/$f")" 600 "mode of $f"
done
S="$WORK/plain/summary.json"
check_eq "$(json "$S" 's.cells.map(c=>c.name+(c.control?"*":"")).join()')" "c1 cold*,c1 warm,c4 cold,c4 warm" \
  "cells in order, the baseline's configuration first as the control"
check_eq "$(json "$S" 's.cells.map(c=>c.compared+"/"+c.differing).join()')" "12/0,12/0,12/0,12/0" \
  "every cell compares 2 runs of 6 outputs and none differs"
check_eq "$(json "$S" 's.compared+"/"+s.differing+"/"+s.differs')" "48/0/false" "totals"
check_contains "$WORK/plain/summary.md" "0 of 48 differed: the per-request rate is at most $(zero_bound 48) (95 %), not zero" \
  "the scope's bound over the whole study"
check_contains "$WORK/plain/summary.md" "the noise floor every other cell is read against: 0 of 12 differed: the per-request rate is at most $(zero_bound 12) (95 %), not zero" \
  "the control's bound"
check_contains "$WORK/plain/summary.md" "**Scope.** This is direct evidence about \`retrace-sim\` as the server named it, served by retrace-serve" \
  "the scope names the model and the identified server"
check_contains "$WORK/plain/summary.md" "this set of 6 requests (6 distinct prompts), at concurrency 1 to 4" "the scope's N and load range"
check_contains "$WORK/plain/summary.md" "at temperature 0 (as sent on every request)" "the scope says the requests were greedy"
check_contains "$WORK/plain/summary.md" "It is not evidence about determinism in general" "the scope says what it is not"
check_eq "$(head -3 "$WORK/plain/summary.md" | tail -1 | cut -c1-10)" "**Scope.**" "the scope comes first"
check_contains "$WORK/plain.out" "**Scope.**" "the scope is printed"
# The client's headroom, read from each run's header: one line for the study, one per cell.
grep -qE '^client: busiest run \((baseline|c[14] (cold|warm)), (baseline|repeat [12])\) used [0-9]+ % of one core .*: (not the bottleneck|it may have been the bottleneck)' \
  "$WORK/plain.out" || fail "the study's summary states the client's headroom: $(grep -m1 '^client' "$WORK/plain.out")"
check_eq "$(json "$S" 's.cells.every(c=>c.client && /^used \d+ % of one core/.test(c.client.summary)) && s.runs.every(r=>r.client)')" \
  "true" "every cell's and run's client figures are in summary.json"
check_contains "$WORK/plain/summary.md" "- c4 warm: used " "summary.md: each cell's client"
check_contains "$WORK/plain/report.html" "client: busiest run (" "report.html states the client's headroom"
check_eq "$(head -1 "$WORK/plain/summary.csv" | tr -d '\r' | awk -F, '{print $(NF-3)}')" "client_cores_used" "summary.csv's client columns"
# Cached tokens: cold cells (a fresh cache_salt per request) never hit; warm cells always do.
check_eq "$(json "$S" 's.cells.map(c=>c.cache+":"+c.cached.hits+"/"+c.cached.reported).join()')" \
  "cold:0/12,warm:12/12,cold:0/12,warm:12/12" "cache hits per cell as the server reported them"
check_eq "$(json "$S" 's.cells.map(c=>c.cache_note).join("|")')" "|||" "no cell's cache state is in doubt"
check_eq "$(json "$S" 's.sampling.greedy+"/"+s.sampling.exchanges+"/"+s.greedy')" "54/54/true" "sampling audit: all greedy"
check_eq "$(wc -l <"$WORK/plain/exchanges.csv")" "55" "exchanges.csv: a header and one row per exchange of the 9 runs"
# Throughput per cell: the mean of its runs' rates, with a 95 % interval around it.
check_eq "$(json "$S" 's.cells.every(c=>c.requests_per_s.samples==2 && c.requests_per_s.ci95_low<=c.requests_per_s.mean && c.requests_per_s.mean<=c.requests_per_s.ci95_high)')" \
  "true" "throughput intervals hold their means"
check_eq "$(json "$S" 'Math.abs(s.cells[3].requests_per_s.mean-(s.runs[7].requests_per_s+s.runs[8].requests_per_s)/2)<1e-6')" \
  "true" "a cell's throughput is the mean of its runs'"

# 2. --cache-variance: a cache hit changes the reduction order, so warm cells differ, cold ones not.
start_listening CACHED "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off --cache-variance
study cached "$CACHED_URL" -c 1 --cache cold,warm --repeat 2
[[ $status == 1 ]] || { cat "$WORK/cached.err" >&2; fail "cache variance: exit $status, want 1"; }
S="$WORK/cached/summary.json"
check_eq "$(json "$S" 's.cells[0].differing')" "0" "cold vs cold (the control) is identical"
differing=$(json "$S" 's.cells[1].differing')
(( differing > 0 )) || fail "no warm output differs with --cache-variance"
check_eq "$(json "$S" 's.cells[1].near_ties+s.cells[1].real_changes+s.cells[1].unclassified')" "$differing" \
  "every differing output is a near-tie, a real change or unclassified"
check_eq "$(json "$S" 's.cells[1].first_divergence_positions.length')" "$differing" "one first divergence per differing output"
check_eq "$(json "$S" 's.cells[1].first_divergence_histogram.reduce((a,b)=>a+b.outputs,0)')" "$differing" \
  "the histogram counts every first divergence"
check_contains "$WORK/cached/summary.md" "## First divergent token" "the histogram is in summary.md"
check_contains "$WORK/cached/summary.md" "$differing of 24 differed: the per-request rate is at most" "the bound with differences"
# The HTML report: written beside the summaries, and again by `retrace report DIR`.
check_contains "$WORK/cached/report.html" '<p class="scope">Scope. This is direct evidence about retrace-sim' "report.html opens with the scope"
check_contains "$WORK/cached/report.html" 'id="positions"' "report.html has the histogram of first divergences"
"$RETRACE" report "$WORK/cached" -o "$WORK/cached-again.html" >/dev/null || fail "retrace report on a study directory"
check_contains "$WORK/cached-again.html" "c1 warm" "retrace report shows the study's cells"
check_contains "$WORK/cached-again.html" 'id="positions"' "retrace report has the histogram"
diff_status=0
"$RETRACE" diff "$WORK/cached/baseline.rtrace" "$WORK/cached/c1-warm-r1.rtrace" "$WORK/cached/c1-warm-r2.rtrace" \
  --json >"$WORK/cached-diff.json" || diff_status=$?
check_eq "$diff_status" "1" "retrace diff sees the warm divergence too"
check_eq "$(json "$WORK/cached-diff.json" 's.runs.map(r=>r.identical+"/"+r.divergent).join()')" \
  "$(json "$S" 's.runs.filter(r=>r.cell=="c1 warm").map(r=>(r.compared-r.differing)+"/"+r.differing).join()')" \
  "summary and diff agree on the warm runs"

# 3. --batch-variance: outputs depend on the batch, so the loaded cell differs, the control not.
start_listening BATCHED "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off --batch-variance
LIMIT=20 study batched "$BATCHED_URL" -c 1,16 --cache cold --repeat 2
[[ $status == 1 ]] || { cat "$WORK/batched.err" >&2; fail "batch variance: exit $status, want 1"; }
S="$WORK/batched/summary.json"
check_eq "$(json "$S" 's.cells.map(c=>c.name).join()')" "c1 cold,c16 cold" "cold cells only"
check_eq "$(json "$S" 's.cells[0].differing')" "0" "the control does not differ"
(( $(json "$S" 's.cells[1].differing') > 0 )) || fail "no output differs at concurrency 16 with --batch-variance"

# 4. A warm cell that never hits says so: a server without a prefix cache reports no hits.
start_listening NOCACHE "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off --prefix-cache off
study nocache "$NOCACHE_URL" -c 1 --cache cold,warm --repeat 1
[[ $status == 0 ]] || { cat "$WORK/nocache.err" >&2; fail "no prefix cache: exit $status, want 0"; }
check_contains "$WORK/nocache/summary.md" "c1 warm: the server reported no cached-token counts, so whether this cell was warm is not known" \
  "a warm cell without reported hits is not called warm"

# The simulator's prefix cache as a client sees it: a repeated prompt reuses whole 16-token blocks;
# another cache_salt or cache_prompt false does not; no cache, no count.
prompt='{"prompt":"one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty","max_tokens":2,"temperature":0'
cached() { curl -sS "$1/v1/completions" -d "$2" | jq -c '.usage.prompt_tokens_details.cached_tokens'; }
start_listening FRESH "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off
check_eq "$(cached "$FRESH_URL" "$prompt}")" "0" "a first prompt finds nothing cached"
(( $(cached "$FRESH_URL" "$prompt}") >= 16 )) || fail "a repeated prompt reuses its blocks"
check_eq "$(cached "$FRESH_URL" "$prompt,\"cache_salt\":\"s1\"}")" "0" "another cache_salt shares nothing"
check_eq "$(cached "$FRESH_URL" "$prompt,\"cache_prompt\":false}")" "0" "cache_prompt false skips the cache"
check_eq "$(cached "$NOCACHE_URL" "$prompt}")" "null" "--prefix-cache off reports no count"
status=0; "$RETRACE" serve --listen 127.0.0.1:0 --prefix-cache off --cache-variance 2>"$WORK/serve-bad.err" || status=$?
check_eq "$status" "2" "--cache-variance without the prefix cache"
check_contains "$WORK/serve-bad.err" "--cache-variance needs the prefix cache" "the refusal says why"

# Refusals: an existing study directory, a bad cache state.
status=0; "$RETRACE" study "$WORK/open.rtrace" --target "$PLAIN_URL" --out "$WORK/plain" 2>"$WORK/again.err" || status=$?
check_eq "$status" "2" "study into an existing study directory"
check_contains "$WORK/again.err" "--resume" "the refusal names --resume"
status=0; "$RETRACE" study "$WORK/open.rtrace" --target "$PLAIN_URL" --cache cold,hot --out "$WORK/bad" 2>"$WORK/bad.err" || status=$?
check_eq "$status" "2" "bad --cache"
check_contains "$WORK/bad.err" "'hot'" "the bad state is named"
status=0; "$RETRACE" sweep --resume "$WORK/plain" 2>"$WORK/sweep-resume.err" || status=$?
check_eq "$status" "2" "sweep --resume of a study directory"
check_contains "$WORK/sweep-resume.err" "retrace study --resume" "the refusal names study --resume"
echo "ok"
