# retrace shadow with three real `retrace serve`s: primary and control alike, the candidate with
# other weights (--weights-seed 1: every answer differs). The client (a replay of the gold trace,
# then the official openai npm client) is answered exactly as directly by the primary; each
# request is mirrored; the verdict puts the candidate's excess over the control near 100 % and
# --fail-if-excess makes the exit 1; /metrics and summary.json carry the figures; `retrace diff
# DIR` reads the run as primary against control and candidate.
. "$(dirname "$0")/lib.sh"
export RETRACE_ROOT="$ROOT"
GOLD="$ROOT/traces/gold-intents.rtrace"
SERVE=(serve --listen 127.0.0.1:0 --latency-model off --prefix-cache off)

start_listening primary "$RETRACE" "${SERVE[@]}"
start_listening control "$RETRACE" "${SERVE[@]}"
start_listening candidate "$RETRACE" "${SERVE[@]}" --weights-seed 1

"$RETRACE" replay "$GOLD" --target "$primary_URL" -c 4 --out "$WORK/direct.rtrace" >/dev/null 2>"$WORK/direct.err" ||
  { cat "$WORK/direct.err" >&2; fail "direct replay"; }
node "$ROOT/tests/e2e/record_openai_client.mjs" "$primary_URL/v1" sk-client-key session=c conv-1 >"$WORK/direct.jsonl"

export CANDIDATE_TOKEN="candidate-secret-$RANDOM$RANDOM"
start_listening shadow "$RETRACE" shadow --primary "$primary_URL" --control "$control_URL" \
  --candidate-header X-Deploy-Token=CANDIDATE_TOKEN \
  --candidate "$candidate_URL" --out "$WORK/run" --listen 127.0.0.1:0 --admin-listen 127.0.0.1:0 \
  --report-every 100ms --fail-if-excess 0.5
admin_URL=$(grep -m1 -oE 'admin on http://[^ ]+' "$WORK/shadow.out" | sed 's/^admin on //')

"$RETRACE" replay "$GOLD" --target "$shadow_URL" -c 4 --out "$WORK/through.rtrace" >/dev/null 2>"$WORK/through.err" ||
  { cat "$WORK/through.err" >&2; fail "replay through shadow"; }
node "$ROOT/tests/e2e/record_openai_client.mjs" "$shadow_URL/v1" sk-client-key session=c conv-1 >"$WORK/through.jsonl"

# The client's answers: the same as the primary's given directly (outputs and the parsed client view).
"$RETRACE" diff "$WORK/direct.rtrace" "$WORK/through.rtrace" >"$WORK/client.diff" ||
  { cat "$WORK/client.diff" >&2; fail "the client's answers through shadow differ from a direct replay's"; }
cmp "$WORK/direct.jsonl" "$WORK/through.jsonl" || fail "the openai client parsed different output through shadow"

# 20 gold requests, 3 openai calls (and replay's preflight GET /v1/models is a probe, not mirrored).
pairs_of() { json "$WORK/run/summary.json" "s.legs.$1 ? s.legs.$1.pairs + s.legs.$1.not_compared + s.legs.$1.errors : -1"; }
wait_until_output "23 candidate pairs compared" 23 pairs_of candidate
wait_until_output "23 control pairs compared" 23 pairs_of control
# record's own counters count an exchange once its frame is flushed (--flush-interval): wait for it.
metrics_hold() { curl -sf "$admin_URL/metrics" >"$WORK/metrics.txt" && grep -qF "$1" "$WORK/metrics.txt"; }
wait_until "record's 23 recorded on /metrics" metrics_hold 'retrace_record_exchanges_total{outcome="recorded"} 23'
check_contains "$WORK/metrics.txt" 'retrace_shadow_pairs_total{leg="candidate"} 23' "candidate pairs on /metrics"
check_contains "$WORK/metrics.txt" 'retrace_shadow_pairs_total{leg="control"} 23' "control pairs on /metrics"
check_contains "$WORK/metrics.txt" 'retrace_shadow_excess{bound="low"}' "the excess interval on /metrics"
check_contains "$WORK/metrics.txt" 'retrace_shadow_first_divergence_total{leg="candidate",from_token=' "the first-divergence histogram on /metrics"
check_contains "$WORK/metrics.txt" 'retrace_record_exchanges_total{outcome="recorded"} 23' "record's own figures still there"

status=0
stop "$shadow_PID" || status=$?
check_eq "$status" 1 "--fail-if-excess 0.5 with every candidate answer different exits 1"
check_contains "$WORK/shadow.err" "candidate $candidate_URL: compared 23 pair(s), 23 differing" "final summary, candidate"
check_contains "$WORK/shadow.err" "control $control_URL: compared 23 pair(s), 0 differing" "final summary, control"
check_contains "$WORK/shadow.err" "--fail-if-excess 50.0 %: FAIL" "the gate named"
check_eq "$(json "$WORK/run/summary.json" 's.state')" "terminated" "the final summary.json's state"
check_eq "$(json "$WORK/run/summary.json" 's.gate')" "fail" "summary.json's gate"
check_eq "$(json "$WORK/run/summary.json" 's.excess.estimate')" 1 "the candidate's excess: 100 %"
low=$(json "$WORK/run/summary.json" 's.excess.low')
check "the excess's lower bound ($low) is above 75 % (Newcombe, 23 pairs a leg)" node -e "process.exit($low > 0.75 ? 0 : 1)"
check_contains "$WORK/run/summary.md" "Candidate's excess over the control" "summary.md"
# report.html, rewritten with them (the browser opens it in report_browser.sh): the same figures.
check_contains "$WORK/run/report.html" '<td>candidate</td><td>23</td><td>0</td><td>23</td>' "report.html's verdict table"
check_contains "$WORK/run/report.html" '<td>control</td><td>23</td><td>23</td><td>0</td>' "report.html's control row"
check_contains "$WORK/run/report.html" "--fail-if-excess 50.0 %: FAIL" "report.html names the gate"

# diff reads the run: baseline primary, runs control (identical) and candidate (every one differs).
status=0
"$RETRACE" diff "$WORK/run" --json >"$WORK/diff.json" || status=$?
check_eq "$status" 1 "diff of the shadow run exits 1 (the candidate differs)"
check_eq "$(json "$WORK/diff.json" 's.runs.map(r => r.name).join(",")')" "control,candidate" "runs named"
check_eq "$(json "$WORK/diff.json" 's.runs[0].identical')" 23 "control identical to the primary"
check_eq "$(json "$WORK/diff.json" 's.runs[1].divergent')" 23 "candidate differs everywhere"
# Each leg is a segment set any reader reads (inspect predates shadow).
"$RETRACE" inspect "$WORK/run/candidate" >"$WORK/inspect.txt" || fail "inspect a leg"
check_contains "$WORK/inspect.txt" "exchanges     23" "the candidate leg holds 23 exchanges"
# The candidate's own credential, under a name no secret pattern knows, never reaches its trace.
if grep -rqF "$CANDIDATE_TOKEN" "$WORK/run"; then fail "the candidate's credential is in the shadow run's files"; fi
"$RETRACE" export "$WORK/run/candidate" >"$WORK/candidate.jsonl"
check_contains "$WORK/candidate.jsonl" '"X-Deploy-Token"' "the credential header is in the candidate's trace, redacted"
if grep -qF "$CANDIDATE_TOKEN" "$WORK/candidate.jsonl"; then fail "the candidate's credential is in its trace"; fi
echo "ok"
