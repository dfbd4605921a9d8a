# retrace shadow with a candidate whose outputs depend on the batch (`retrace serve
# --batch-variance`, the reduction split following the running batch size) while the primary and
# the control are deterministic: 32 greedy requests sent together share the candidate's batches,
# so some of its answers differ from the primary's and some do not. The verdict puts the
# candidate's excess over the control strictly between 0 and 1, inside its Newcombe interval,
# and `retrace diff DIR` finds the same differing pairs.
. "$(dirname "$0")/lib.sh"

COUNT=32
import_numbered "$WORK/source.rtrace" $COUNT \
  '{"request":{"model":"retrace-sim","prompt":"Question %d: what should we do about the order?","max_tokens":64,"temperature":0,"ignore_eos":true,"logprobs":5,"stream":true}}' \
  --endpoint completions

start_listening primary "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off
start_listening control "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off
# The default latency model: each request lasts long enough that all 32 overlap in one batch.
start_listening candidate "$RETRACE" serve --listen 127.0.0.1:0 --batch-variance

start_listening shadow "$RETRACE" shadow --primary "$primary_URL" --control "$control_URL" \
  --candidate "$candidate_URL" --out "$WORK/run" --listen 127.0.0.1:0 --report-every 100ms \
  --mirror-concurrency $COUNT --mirror-queue $COUNT --max-pairs $COUNT
"$RETRACE" replay "$WORK/source.rtrace" --target "$shadow_URL" -c $COUNT --out "$WORK/through.rtrace" \
  >/dev/null 2>"$WORK/through.err" || { cat "$WORK/through.err" >&2; fail "replay through shadow"; }
status=0
wait "$shadow_PID" || status=$?
check_eq "$status" 0 "--max-pairs ends the run"
check_contains "$WORK/shadow.err" "--max-pairs reached" "--max-pairs stopped the run"

S="$WORK/run/summary.json"
check_eq "$(json "$S" 's.legs.candidate.pairs')" $COUNT "every candidate pair compared"
check_eq "$(json "$S" 's.legs.control.differing')" 0 "the deterministic control never differs"
differing=$(json "$S" 's.legs.candidate.differing')
echo "the candidate differs on $differing of $COUNT pairs; excess $(json "$S" 'JSON.stringify(s.excess)')"
check "some candidate answers differ and some do not ($differing of $COUNT)" \
  test "$differing" -gt 0 -a "$differing" -lt $COUNT
check_eq "$(json "$S" "s.excess.estimate === $differing / $COUNT")" true "the excess is the candidate's difference rate minus the control's 0"
check "the excess ($(json "$S" 'JSON.stringify(s.excess)')) is strictly between 0 and 1 and inside its interval" \
  node -e "const e = JSON.parse(require('fs').readFileSync('$S', 'utf8')).excess;
    process.exit(e.estimate > 0 && e.estimate < 1 && e.low < e.estimate && e.estimate < e.high &&
                 e.low > -1 && e.high < 1 ? 0 : 1)"
check_eq "$(json "$S" 'Object.values(s.legs.candidate.first_divergence_histogram).reduce((a, b) => a + b, 0)')" \
  "$differing" "each differing pair in the first-divergence histogram"

# diff reads the run and agrees: the same pairs differ.
status=0
"$RETRACE" diff "$WORK/run" --json >"$WORK/diff.json" || status=$?
check_eq "$status" 1 "diff of the shadow run exits 1 (the candidate differs)"
check_eq "$(json "$WORK/diff.json" 's.runs[1].divergent')" "$differing" "diff finds the same differing pairs"
check_eq "$(json "$WORK/diff.json" 's.runs[0].identical')" $COUNT "control identical to the primary"
echo "ok"
