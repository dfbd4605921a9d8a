#!/usr/bin/env bash
# study against an SGLang-shaped upstream (tests/e2e/sglang_upstream.py: a prefix cache emptied by
# POST /flush_cache, cached tokens in usage): the study identifies the server as SGLang, empties its
# cache before every cold run and never before a warm one, and the cached tokens the server reports
# show the cold cells cold and the warm cells warm. When the flush is refused, the study warns, and
# the cold cells say they were not wholly cold instead of being reported as cold.
. "$(dirname "$0")/lib.sh"

upstream_counts() { curl -s "$1/flushes"; }

"$RETRACE" import "$ROOT/traces/open-ended.jsonl" --out "$WORK/open.rtrace" 2>/dev/null
study() {  # study NAME URL ARGS...: exit status in $status
  local name=$1 url=$2; shift 2
  status=0
  "$RETRACE" study "$WORK/open.rtrace" --target "$url" --limit 4 --token-ids off --out "$WORK/$name" \
    "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" || status=$?
}

# 1. A flush that works: one per cold run (the baseline included when it is cold), none for warm.
start_listening SGL python3 "$ROOT/tests/e2e/sglang_upstream.py" 0
study flushed "$SGL_URL" -c 1,2 --cache cold,warm --repeat 1
[[ $status == 0 ]] || { cat "$WORK/flushed.err" >&2; fail "sglang study: exit $status, want 0"; }
S="$WORK/flushed/summary.json"
check_contains "$WORK/flushed.err" "server sglang 0.4.0-test; cold cache: POST /flush_cache before the run" \
  "the study identified SGLang and says how it empties the cache"
# The runs the study says it ran cold (the baseline among them: it runs in the first cache state).
cold_runs=$(grep -c '^study: run .*, cold \.\.\.' "$WORK/flushed.err" || true)
check_eq "$cold_runs" "3" "cold runs: the baseline, c1 and c2"
check_eq "$(upstream_counts "$SGL_URL" | node -e "console.log(JSON.parse(require('fs').readFileSync(0)).flushes)")" \
  "$cold_runs" "one POST /flush_cache per cold run"
check_eq "$(json "$S" 's.cells.map(c=>c.cache+":"+c.cached.hits+"/"+c.cached.reported).join()')" \
  "cold:0/4,warm:4/4,cold:0/4,warm:4/4" "cached tokens: cold cells never hit, warm cells always do"
check_eq "$(json "$S" 's.cells.map(c=>c.cache_note).join("|")')" "|||" "no cell's cache state is in doubt"
check_contains "$WORK/flushed/summary.md" "served by sglang" "the scope names the identified server"

# 2. A server that refuses the flush: the study warns and the cold cells are not called cold.
start_listening STALE python3 "$ROOT/tests/e2e/sglang_upstream.py" 0 --no-flush
study stale "$STALE_URL" -c 1 --cache cold --repeat 2
check_contains "$WORK/stale.err" "POST /flush_cache answered 404; this cold run may meet a warm cache" \
  "a refused flush is a warning, not silence"
check_eq "$(upstream_counts "$STALE_URL" | node -e "console.log(JSON.parse(require('fs').readFileSync(0)).flushes)")" \
  "0" "the stale server never emptied its cache"
notes=$(json "$WORK/stale/summary.json" 's.cells.map(c=>c.cache_note).join("|")')
[[ "$notes" == *"responses reported cached tokens: not wholly cold"* ]] ||
  fail "a cold cell that met a warm cache must say so; notes: '$notes'"
echo "ok"
