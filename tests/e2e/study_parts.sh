#!/usr/bin/env bash
# Which part of an output diverged first, per study cell: against `retrace serve --reasoning 8
# --batch-variance` (chat answers reason first; outputs depend on the batch) the loaded cell's
# differing outputs are counted by the part of their first divergence. The counts must sum to the
# cell's differing count, and equal what `retrace diff --json` says of the same run files, pair by
# pair, in summary.json, summary.md, summary.csv and report.html.
. "$(dirname "$0")/lib.sh"

json() { node -e "const s=JSON.parse(require('fs').readFileSync(process.argv[1],'utf8')); console.log($2)" "$1"; }

"$RETRACE" import "$ROOT/traces/open-ended.jsonl" --out "$WORK/open.rtrace" 2>/dev/null
start_listening SERVE "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off --reasoning 8 --batch-variance

status=0
"$RETRACE" study "$WORK/open.rtrace" --target "$SERVE_URL" --limit 20 -c 1,16 --cache cold --repeat 2 \
  --token-ids logprobs --out "$WORK/parts" >"$WORK/parts.out" 2>"$WORK/parts.err" || status=$?
[[ $status == 1 ]] || { cat "$WORK/parts.err" >&2; fail "exit $status, want 1 (outputs differ under load)"; }
S="$WORK/parts/summary.json"
check_eq "$(json "$S" 's.cells.map(c=>c.name).join()')" "c1 cold,c16 cold" "the cells"
check_eq "$(json "$S" 's.cells.every(c=>Object.values(c.first_diverging_part).reduce((a,b)=>a+b,0)==c.differing)')" "true" \
  "every cell's per-part counts sum to its differing count"
differing=$(json "$S" 's.cells[1].differing')
(( differing > 0 )) || fail "no output differs at concurrency 16 with --batch-variance"
check_eq "$(json "$S" 'Object.keys(s.cells[1].first_diverging_part).every(k=>k=="reasoning"||k=="content")')" "true" \
  "chat answers with reasoning diverge first in their reasoning or their content"

# retrace diff by hand on the same files: each divergent pair's first divergence, counted by part.
diff_status=0
"$RETRACE" diff "$WORK/parts/baseline.rtrace" "$WORK/parts/c16-cold-r1.rtrace" "$WORK/parts/c16-cold-r2.rtrace" \
  --json >"$WORK/diff.json" || diff_status=$?
check_eq "$diff_status" "1" "retrace diff sees the differences too"
by_hand=$(json "$WORK/diff.json" '(()=>{const n={};for(const r of s.runs)for(const p of r.pairs)if(p.verdict=="divergent"){const k=p.divergences[0].part;n[k]=(n[k]||0)+1};return JSON.stringify(Object.keys(n).sort().map(k=>[k,n[k]]))})()')
check_eq "$(json "$S" 'JSON.stringify(Object.keys(s.cells[1].first_diverging_part).sort().map(k=>[k,s.cells[1].first_diverging_part[k]]))')" \
  "$by_hand" "the cell's per-part counts are retrace diff's"

# The same counts in the other forms: "reasoning 2, content 1" in generation order.
words=$(json "$S" '(()=>{const p=s.cells[1].first_diverging_part;return ["reasoning","content"].filter(k=>p[k]).map(k=>k+" "+p[k]).join(", ")})()')
check_contains "$WORK/parts/summary.md" "| $words |" "summary.md's cell table names the parts"
check_contains "$WORK/parts.out" "$words" "the printed summary names the parts"
csv_sum=$(node -e "
  const rows=require('fs').readFileSync('$WORK/parts/summary.csv','utf8').trim().split(/\r?\n/).map(l=>l.split(','));
  const h=rows[0], r=rows.find(x=>x[0]=='c16 cold');
  console.log(h.filter(c=>c.startsWith('first_part_')).reduce((a,c)=>a+Number(r[h.indexOf(c)]),0)+'/'+r[h.indexOf('differing')]);")
check_eq "$csv_sum" "$differing/$differing" "summary.csv's part columns sum to the differing count"
check_contains "$WORK/parts/report.html" 'id="parts"' "report.html has the parts table"
check_contains "$WORK/parts/report.html" "<td>$words</td>" "report.html names the parts"
echo "ok"
