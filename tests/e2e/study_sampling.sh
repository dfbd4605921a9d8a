#!/usr/bin/env bash
# study's sampling audit and the rest of its contract: requests that are not greedy are refused
# (exit 2) unless --greedy (temperature 0 on every request, as the audit then shows) or
# --allow-sampling (every output then says NOT GREEDY and never speaks of nondeterminism);
# --same-prompt N sends one prompt N times; an interrupted study continues with --resume; failed
# requests beyond --max-error-rate exit 3.
. "$(dirname "$0")/lib.sh"


"$RETRACE" import "$ROOT/traces/open-ended.jsonl" --out "$WORK/open.rtrace" 2>/dev/null
start_listening SERVE "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off

# Not greedy: the temperature left to the server.
status=0
"$RETRACE" study "$WORK/open.rtrace" --target "$SERVE_URL" --limit 4 --unset temperature --out "$WORK/refused" \
  >"$WORK/refused.out" 2>"$WORK/refused.err" || status=$?
check_eq "$status" "2" "a study of requests that are not greedy is refused"
check_contains "$WORK/refused.err" "4 of 4 requests are not greedy (4 leave the temperature to the server's defaults)" \
  "the refusal counts what is not greedy"
check_contains "$WORK/refused.err" "--greedy" "the refusal names --greedy"
[[ ! -e "$WORK/refused/baseline.rtrace" ]] || fail "a refused study sent requests"

# --allow-sampling: it runs, and every output says so first.
status=0
"$RETRACE" study "$WORK/open.rtrace" --target "$SERVE_URL" --limit 4 --unset temperature --set top_p=0.9 \
  --allow-sampling -c 1 --cache cold --repeat 2 --out "$WORK/sampled" >"$WORK/sampled.out" 2>"$WORK/sampled.err" || status=$?
[[ $status == 0 || $status == 1 ]] || { cat "$WORK/sampled.err" >&2; fail "sampled study: exit $status"; }
check_eq "$(sed -n 3p "$WORK/sampled/summary.md" | cut -c1-16)" "**NOT GREEDY**: " "summary.md opens with the warning"
check_contains "$WORK/sampled.out" "**NOT GREEDY**: 12 of 12 requests were not sent at temperature 0" "the terminal output too"
check_eq "$(json "$WORK/sampled/summary.json" 's.greedy+"/"+(s.not_greedy||"").startsWith("**NOT GREEDY**")')" "false/true" \
  "summary.json says it is not greedy"
check_eq "$(json "$WORK/sampled/summary.json" 's.sampling.temperature.absent+"/"+s.sampling.top_p["0.9"]')" "12/12" \
  "the audit records each exchange's sampling as sent"
check_eq "$(head -2 "$WORK/sampled/summary.csv" | tail -1 | cut -d, -f5)" "0" "summary.csv's greedy column"
if grep -qi "nondetermin" "$WORK/sampled/summary.md" "$WORK/sampled/summary.json" "$WORK/sampled.out"; then
  fail "a sampled study must not call its differences nondeterminism"
fi
check_contains "$WORK/sampled/exchanges.csv" "baseline,c1 cold,0,1,,1,0.9" "exchanges.csv: no temperature, left to the server"

# --greedy: the same requests, sent at temperature 0.
status=0
"$RETRACE" study "$WORK/open.rtrace" --target "$SERVE_URL" --limit 4 --unset temperature --greedy \
  -c 1 --cache cold --repeat 1 --out "$WORK/greedy" >"$WORK/greedy.out" 2>"$WORK/greedy.err" || status=$?
[[ $status == 0 ]] || { cat "$WORK/greedy.err" >&2; fail "--greedy study: exit $status, want 0"; }
check_eq "$(json "$WORK/greedy/summary.json" 's.sampling.temperature["0"]+"/"+s.greedy_forced+"/"+s.not_greedy')" "8/true/null" \
  "--greedy sent temperature 0 on every request"
check_contains "$WORK/greedy/summary.md" "at temperature 0 (set by --greedy on every request)" "the scope says who set it"

# import --greedy: lines that ask for a temperature get 0, and the study takes them.
printf '{"prompt":"Tell me about rivers","temperature":0.8}\n{"prompt":"Tell me about hills"}\n' >"$WORK/warm.jsonl"
"$RETRACE" import "$WORK/warm.jsonl" --out "$WORK/warm.rtrace" 2>/dev/null
status=0
"$RETRACE" study "$WORK/warm.rtrace" --target "$SERVE_URL" -c 1 --cache cold --repeat 1 --out "$WORK/hot" 2>"$WORK/hot.err" || status=$?
check_eq "$status" "2" "a line at temperature 0.8 is refused"
check_contains "$WORK/hot.err" "1 of 2 requests are not greedy (1 ask for a temperature above 0)" "the refusal says which"
"$RETRACE" import "$WORK/warm.jsonl" --greedy --out "$WORK/greedy-import.rtrace" 2>/dev/null
status=0
"$RETRACE" study "$WORK/greedy-import.rtrace" --target "$SERVE_URL" -c 1 --cache cold --repeat 1 --json \
  --out "$WORK/cooled" >"$WORK/cooled.json" 2>"$WORK/cooled.err" || status=$?
[[ $status == 0 ]] || { cat "$WORK/cooled.err" >&2; fail "study of an import --greedy trace: exit $status"; }
check_eq "$(json "$WORK/cooled.json" 's.sampling.temperature["0"]+"/"+s.greedy_forced')" "4/false" \
  "import --greedy wrote temperature 0 into every body"

# --same-prompt: one prompt, N times per run.
status=0
"$RETRACE" study "$WORK/open.rtrace" --target "$SERVE_URL" --same-prompt 10 -c 1,4 --cache cold --repeat 1 \
  --out "$WORK/same" --json >"$WORK/same.json" 2>"$WORK/same.err" || status=$?
[[ $status == 0 ]] || { cat "$WORK/same.err" >&2; fail "--same-prompt study: exit $status, want 0"; }
check_eq "$(json "$WORK/same.json" 's.requests+"/"+s.prompts+"/"+s.same_prompt')" "10/1/10" "10 copies of one prompt"
check_eq "$(json "$WORK/same.json" 's.cells.map(c=>c.unique_completions.prompts+":"+c.unique_completions.max).join()')" "1:1,1:1" \
  "one prompt, one completion, in every cell"
check_contains "$WORK/same/summary.md" "on one prompt sent 10 times per run" "the scope says it is one prompt"

# Interrupted, then resumed: finished runs are kept, the summary covers every run.
start_listening SLOW "$RETRACE" serve --listen 127.0.0.1:0 --decode-step-ms 5
"$RETRACE" study "$WORK/open.rtrace" --target "$SLOW_URL" --limit 4 -c 1,2 --cache cold,warm --repeat 1 \
  --out "$WORK/resumed" >"$WORK/first.out" 2>"$WORK/first.err" &
study_pid=$!
_PIDS+=("$study_pid")
done_runs() { grep -o '"status":"done"' "$WORK/resumed/plan.json" 2>/dev/null | wc -l; }
for _ in $(seq 1 1200); do
  (( $(done_runs) >= 2 )) && break
  kill -0 "$study_pid" 2>/dev/null || break
  sleep 0.05
done
kill -KILL "$study_pid" 2>/dev/null || fail "the study finished before it could be interrupted"
wait "$study_pid" 2>/dev/null || true
finished=$(done_runs)
(( finished >= 2 && finished < 5 )) || fail "expected an interrupted study, $finished of 5 runs done"
baseline_inode=$(stat -c %i "$WORK/resumed/baseline.rtrace")
status=0
"$RETRACE" study --resume "$WORK/resumed" --json >"$WORK/resumed.json" 2>"$WORK/second.err" || status=$?
[[ $status == 0 ]] || { cat "$WORK/second.err" >&2; fail "resumed study: exit $status, want 0"; }
check_contains "$WORK/second.err" "$finished of 5 runs already done" "resume reports what it skips"
check_eq "$(stat -c %i "$WORK/resumed/baseline.rtrace")" "$baseline_inode" "the baseline run is not redone"
check_eq "$(json "$WORK/resumed.json" 's.runs.length+"/"+s.compared')" "5/16" "the summary covers every run"
status=0; "$RETRACE" study --resume "$WORK/resumed" --cache cold 2>"$WORK/resume-flag.err" || status=$?
check_eq "$status" "2" "--resume with a setting"
check_contains "$WORK/resume-flag.err" "--cache cannot change them" "the refusal names the flag"

# Every request failing (a 1 ms timeout against a slow server) is exit 3, as for sweep.
status=0
"$RETRACE" study "$WORK/open.rtrace" --target "$SLOW_URL" --limit 2 -c 1 --cache cold --repeat 1 --timeout 1ms \
  --out "$WORK/failing" >"$WORK/failing.out" 2>"$WORK/failing.err" || status=$?
check_eq "$status" "3" "failed requests beyond --max-error-rate"
check_contains "$WORK/failing.err" "results are incomplete" "the failure is said"
check_contains "$WORK/failing/summary.md" "requests failed and are not counted" "the scope says requests failed"
echo "ok"
