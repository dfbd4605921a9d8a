#!/usr/bin/env bash
# release-only: the whole demo (28 s under ASan); under the sanitizers each of its stages runs in its own e2e test (record_*, sweep_axes, study_*, bisect_*)
# `retrace demo --quick` runs end to end in the suite: simulator, recorder, a sweep, a study, a bisect;
# its output is checked and every child process is gone afterwards.
. "$(dirname "$0")/lib.sh"

status=0
(cd "$WORK" && "$RETRACE" demo --quick --dir "$WORK/demo" >"$WORK/demo.out" 2>"$WORK/demo.err") || status=$?
[[ $status == 0 ]] || { tail -40 "$WORK/demo.err" >&2; cat "$WORK/demo.out" >&2; fail "demo exit $status"; }
out="$WORK/demo.out"
check_contains "$out" "BUILT-IN SIMULATOR" "the demo says it runs against the simulator"
check_contains "$out" "Recorded 20 exchanges" "the gold questions were recorded"
# Gold sweep table: 15 of 20 match on every level row (the answer file is right on 15 of the 20
# questions; summary.json says the same of every run), and 0 of 20 differ from the baseline.
gold_rows=$(sed -n '/## 1\./,/## 2\./p' "$out" | grep -E '^\| [0-9]+ \|')
[[ $(echo "$gold_rows" | wc -l) == 2 ]] || fail "gold table rows: $gold_rows"
k=$(node -e "const s=JSON.parse(require('fs').readFileSync(process.argv[1],'utf8')); const m=[...new Set(s.runs.map(r=>r.matches_expected))]; console.log(m.length==1?m[0]:'mixed')" "$WORK/demo/gold-sweep/summary.json")
[[ "$k" == 15 ]] || fail "gold matches per run: $k (the answer file is right on 15 of 20)"
while read -r row; do
  [[ "$row" == *"| $k of 20 |"* ]] || fail "gold row without $k of 20 matching: $row"
  [[ "$row" == *"| 0 of 20 ("* ]] || fail "gold row with outputs differing from the baseline: $row"
done <<<"$gold_rows"
check_contains "$out" "## 2. Open-ended prompts" "the batch-variance part ran"
# grep without -q reads all its input: with -q it could exit at the first match and, under
# pipefail, sed's SIGPIPE failed the pipeline (seen once in twenty runs).
sed -n '/## 2\./,/## 3\./p' "$out" | grep -E 'token [0-9]+.*margin' >/dev/null ||
  { sed -n '/## 2\./,/## 3\./p' "$out" >&2; tail -20 "$WORK/demo.err" >&2; fail "no divergence with a margin listed"; }
# The study: its scope first, the control (concurrency 1, cold, as the baseline) identical to the
# baseline, and every warm response a cache hit, as the server reported it.
sed -n '/## 2\./,/## 3\./p' "$out" | grep '^\*\*Scope\.\*\* This is direct evidence about `retrace-sim`' >/dev/null || fail "the study's scope"
check_contains "$out" "| c1 cold (control) | 2 | 0 of 40 (≤ 7.2 %) |" "the control does not differ, and its bound"
[[ $(sed -n '/## 2\./,/## 3\./p' "$out" | grep -cE '^\| c[0-9]+ warm \|.*\| 40 \(40 of 40\) \|') == 2 ]] || fail "warm cells without cache hits"
check_contains "$out" "boundary: concurrency" "the bisect found the boundary"
check_contains "$out" "retrace study my.rtrace --target http://YOUR-SERVER" "the real-server commands"
check_contains "$out" "Everything this demo wrote is in $WORK/demo" "the directory is named"
for f in gold-recorded.rtrace gold-sweep/summary.json open-ended-study/summary.md open-ended-study/report.html; do
  [[ -f "$WORK/demo/$f" ]] || fail "demo did not write $f"
done
# No server or recorder outlives the demo.
pids=$(grep -oE '\(pid [0-9]+\)' "$WORK/demo.err" | grep -oE '[0-9]+')
[[ $(echo "$pids" | wc -w) == 3 ]] || fail "expected three child pids in the log, got: $pids"
for pid in $pids; do
  if kill -0 "$pid" 2>/dev/null && grep -q retrace "/proc/$pid/cmdline" 2>/dev/null; then
    fail "child $pid outlived the demo"
  fi
done
echo "ok"
