#!/usr/bin/env bash
# The HTML reports open in a real browser (Debian's headless Chromium): for a sweep with
# divergences, a diff, a single run, a study, a capacity search and retrace shadow's verdict, the page's script builds its view (data-ready="1" on
# <body>, one index row per divergent output), no script error is raised (window.onerror writes
# data-error; Chromium's console log is searched for "Uncaught"), and the page loads nothing. The
# run's page charts the server's /metrics series over the run.
# release-only: the browser is most of its time (21 s under ASan); the pages' generators run under
# the sanitizers in report_test, diff and sweep e2e tests, which write the same pages.
. "$(dirname "$0")/lib.sh"

browser=$(command -v chromium || command -v chromium-browser || true)
[[ -n "$browser" ]] || fail "chromium is not installed; run scripts/deps.sh (Debian package chromium)"

# render NAME FILE: the DOM after the page's scripts ran, in $WORK/NAME.dom; the browser's log in $WORK/NAME.log.
render() {
  local profile; profile=$(mktemp -d "$WORK/profile.XXXXXX")
  timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run --user-data-dir="$profile" \
    --enable-logging=stderr --v=0 --dump-dom "file://$2" >"$WORK/$1.dom" 2>"$WORK/$1.log" \
    || { tail -20 "$WORK/$1.log" >&2; fail "chromium could not render $2"; }
  grep -q 'data-ready="1"' "$WORK/$1.dom" || { tail -20 "$WORK/$1.log" >&2; fail "$1: the page's script did not finish"; }
  if grep -q 'data-error=' "$WORK/$1.dom"; then fail "$1: script error: $(grep -o 'data-error="[^"]*"' "$WORK/$1.dom")"; fi
  if grep -iE 'Uncaught|CONSOLE\(.*(error|refused)' "$WORK/$1.log"; then fail "$1: the console shows an error"; fi
  # No legend (nor any other text or box) over a chart's title, by the boxes Chromium laid out.
  [[ ${2##*/} == crafted.html ]] || check_contains "$WORK/$1.dom" 'data-chart-title-overlaps="0"' "$1: nothing covers a chart's title"
}

"$RETRACE" import "$ROOT/traces/open-ended.jsonl" --out "$WORK/open.rtrace" 2>/dev/null
start_listening VARIANCE "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off --batch-variance
status=0
"$RETRACE" sweep "$WORK/open.rtrace" --target "$VARIANCE_URL" --concurrency 1,16 --repeat 2 \
  --token-ids logprobs --set stream=true --out "$WORK/sweep" >"$WORK/sweep.out" 2>"$WORK/sweep.err" || status=$?
[[ $status == 1 ]] || { cat "$WORK/sweep.err" >&2; fail "sweep with batch variance: exit $status, want 1"; }
check_contains "$WORK/sweep.err" "$WORK/sweep/report.html" "sweep prints the report's path"

# `retrace report DIR` writes the same page as the sweep did.
check_eq "$("$RETRACE" report "$WORK/sweep" -o "$WORK/again.html")" "$WORK/again.html" "report prints the path"
cmp -s "$WORK/sweep/report.html" "$WORK/again.html" || fail "report DIR differs from the sweep's report.html"

render sweep "$WORK/sweep/report.html"
# The check itself sees an overlap: a text drawn over the first chart's title is counted.
sed '0,/<text class="chart-title" x="64" y="20">/s//<text x="70" y="18">covering the title<\/text>&/' \
  "$WORK/sweep/report.html" >"$WORK/crafted.html"
render crafted "$WORK/crafted.html"
grep -q 'data-chart-title-overlaps="[1-9]' "$WORK/crafted.dom" || fail "a text over a chart's title was not counted"
articles=$(grep -o '<article class="divergence"' "$WORK/sweep.dom" | wc -l)
(( articles > 0 )) || fail "the sweep report shows no divergent output"
check_contains "$WORK/sweep.dom" "data-divergences=\"$articles\"" "the script counted every divergent output"
rows=$(grep -o '<tr data-class="[a-z-]*"' "$WORK/sweep.dom" | wc -l)
check_eq "$rows" "$articles" "the script built one index row per divergent output"
check_contains "$WORK/sweep.dom" 'class="first"' "the first divergent token is highlighted"
check_contains "$WORK/sweep.dom" '<path class="cdf"' "latency CDFs are drawn"
check_contains "$WORK/sweep.dom" "95% CI" "throughput has its confidence interval"
check_contains "$WORK/sweep.dom" "≤ " "difference counts carry their bound"
# Real changes (if any) come before near-ties.
order=$(grep -o '<article class="divergence" id="d[0-9]*" data-class="[a-z-]*"' "$WORK/sweep.dom" | grep -o 'data-class="[a-z-]*"' | uniq | tr '\n' ' ')
[[ "$order" != *near-tie*real-change* ]] || fail "a near-tie is listed before a real change: $order"

# A diff of two of the runs, and a single run.
"$RETRACE" report "$WORK/sweep/c1-r1.rtrace" "$WORK/sweep/c16-r1.rtrace" -o "$WORK/diff.html" >/dev/null
render diff "$WORK/diff.html"
check_contains "$WORK/diff.dom" 'data-report-kind="diff"' "a diff report"
"$RETRACE" report "$WORK/sweep/c16-r1.rtrace" -o "$WORK/run.html" >/dev/null
render run "$WORK/run.html"
check_contains "$WORK/run.dom" 'data-report-kind="run"' "a run report"
# The run scraped the server's /metrics (#42): its series over the run, charted beside the
# client's requests in flight.
check_contains "$WORK/run.dom" '<section id="server">' "the run report's server section"
check_contains "$WORK/run.dom" '<path class="line" data-series="running"' "the server's running line"
check_contains "$WORK/run.dom" 'data-series="client in flight"' "the client's in-flight line"

# A study's page: the same script over a column per cell, with the scope on top.
status=0
"$RETRACE" study "$WORK/open.rtrace" --target "$VARIANCE_URL" -c 1,16 --cache cold,warm --repeat 1 \
  --token-ids logprobs --out "$WORK/study" >"$WORK/study.out" 2>"$WORK/study.err" || status=$?
[[ $status == 1 ]] || { cat "$WORK/study.err" >&2; fail "study with batch variance: exit $status, want 1"; }
"$RETRACE" report "$WORK/study" -o "$WORK/study-again.html" >/dev/null || fail "retrace report of a study"
cmp -s "$WORK/study/report.html" "$WORK/study-again.html" || fail "report DIR differs from the study's report.html"
render study "$WORK/study/report.html"
check_contains "$WORK/study.dom" '<p class="scope">Scope. This is direct evidence' "the study's scope is on the page"
check_contains "$WORK/study.dom" "c1 cold (control)" "the control's column"
check_contains "$WORK/study.dom" 'id="positions"' "the histogram of first divergent positions"
(( $(grep -o '<article class="divergence"' "$WORK/study.dom" | wc -l) > 0 )) || fail "the study report shows no divergent output"

# A capacity search's page (sweep --find --stable): its charts and probe table, and `retrace report DIR` writes it again.
status=0
"$RETRACE" sweep "$WORK/open.rtrace" --target "$VARIANCE_URL" --find concurrency --stable 0 \
  --token-ids logprobs --set stream=true --out "$WORK/search" >"$WORK/search.out" 2>"$WORK/search.err" || status=$?
[[ $status == 0 ]] || { cat "$WORK/search.err" >&2; fail "sweep --find --stable: exit $status, want 0"; }
"$RETRACE" report "$WORK/search" -o "$WORK/search-again.html" >/dev/null || fail "retrace report of a search"
cmp -s "$WORK/search/report.html" "$WORK/search-again.html" || fail "report DIR differs from the search's report.html"
render search "$WORK/search/report.html"
check_contains "$WORK/search.dom" 'data-report-kind="search"' "a search page"
check_contains "$WORK/search.dom" '<line class="boundary"' "the boundary is marked"
check_contains "$WORK/search.dom" 'id="probes"' "the probe table"
check_contains "$WORK/search.dom" "Largest concurrency whose answers stay the same" "the answer on the page"

# retrace shadow's page (DIR/report.html, rewritten with summary.json): the verdict table and each
# leg's first-divergence histogram, the candidate with other weights so that every pair differs.
start_listening PRIMARY "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off
start_listening OTHER "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off --weights-seed 1
start_listening SHADOW "$RETRACE" shadow --primary "$PRIMARY_URL" --control "$VARIANCE_URL" \
  --candidate "$OTHER_URL" --out "$WORK/shadow" --listen 127.0.0.1:0 --report-every 50ms --max-pairs 4
"$RETRACE" replay "$WORK/open.rtrace" --target "$SHADOW_URL" --requests 4 -c 1 --out "$WORK/shadow.rtrace" \
  >/dev/null 2>"$WORK/shadow.replay.err" || { cat "$WORK/shadow.replay.err" >&2; fail "replay through shadow"; }
wait "$SHADOW_PID" || true
render shadow "$WORK/shadow/report.html"
check_contains "$WORK/shadow.dom" 'data-report-kind="shadow"' "a shadow page"
check_contains "$WORK/shadow.dom" '<td>candidate</td><td>4</td><td>0</td><td>4</td>' "the verdict table: 4 candidate pairs, 4 differing"
check_contains "$WORK/shadow.dom" 'candidate: first divergent token index' "the candidate's first-divergence histogram"
check_contains "$WORK/shadow.dom" "Candidate's excess over the control" "the excess on the page"
if grep -oE '(src|href)="[^"#][^"]*"' "$WORK/shadow/report.html" | grep -v 'xmlns'; then fail "the shadow page references outside resources"; fi

# Nothing outside the page is referenced: no src= or href= leaving the file.
if grep -oE '(src|href)="[^"#][^"]*"' "$WORK/sweep/report.html" | grep -v 'xmlns'; then fail "the report references outside resources"; fi

# A directory that is not a sweep is refused with what to try.
mkdir "$WORK/empty"
status=0; "$RETRACE" report "$WORK/empty" -o "$WORK/x.html" 2>"$WORK/empty.err" || status=$?
check_eq "$status" "2" "report of a non-sweep directory"
check_contains "$WORK/empty.err" "plan.json" "the refusal says what a sweep directory holds"
echo "ok"
