#!/usr/bin/env bash
# The server's state beside every exchange (#42 items 3-5):
# 1. docs/server-state.md's sh blocks run as written against retrace serve --batch-variance: the
#    series exported, each exchange's server_state, diff's by_cache and by_preempted keys, and the
#    run report's server section (the series charted, the client's in-flight line among them).
# 2. diff by prefix-cache hit or miss: retrace serve --cache-variance (a cache hit changes the
#    answer) answers 24 prompts cold for the baseline; a second server, warmed with the first 12,
#    answers all 24 for the candidate: its 12 hits are where the outputs differ, its 12 misses
#    are identical, and the terminal report says so.
. "$(dirname "$0")/lib.sh"

# 1. The guide.
awk '/^```sh$/{inside=1; next} inside && /^```$/{inside=0; next} inside{print}' "$ROOT/docs/server-state.md" >"$WORK/guide.sh"
check_contains "$WORK/guide.sh" "retrace export --metrics" "the guide's blocks"
mkdir -p "$WORK/bin" "$WORK/guide"
ln -s "$RETRACE" "$WORK/bin/retrace"
start_listening GUIDE "$RETRACE" serve --listen 127.0.0.1:0 --batch-variance
(cd "$WORK/guide" && PATH="$WORK/bin:$PATH" TARGET="$GUIDE_URL" bash -euo pipefail "$WORK/guide.sh") \
  >"$WORK/guide.out" 2>&1 || { tail -20 "$WORK/guide.out" >&2; fail "docs/server-state.md's blocks"; }
grep -q '"series":"running"' "$WORK/guide/series.jsonl" || fail "the guide: no running series"
grep -q '"server_state"' "$WORK/guide/exchanges.jsonl" || fail "the guide: no server_state"
check_eq "$(json "$WORK/guide/diff.json" '["by_in_flight","by_cache","by_preempted"].every(k => Array.isArray(s.runs[0][k]))')" \
  true "the guide: diff --json's breakdowns"
check_contains "$WORK/guide/loaded.html" '<section id="server">' "the guide: the report's server section"
check_contains "$WORK/guide/loaded.html" 'data-series="running"' "the guide: the running line"
check_contains "$WORK/guide/loaded.html" 'data-series="client in flight"' "the guide: the client's line"

# 2. By prefix-cache hit or miss.
import_numbered "$WORK/source.rtrace" 24 \
  '{"request":{"model":"retrace-sim","prompt":"Case %d. '"$(printf 'the quick brown fox jumps over the lazy dog and keeps running past the river %.0s' 1 2 3 4 5)"'","max_tokens":24,"temperature":0}}' \
  --endpoint completions
start_listening COLD "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off --cache-variance
start_listening WARM "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off --cache-variance
run() {  # URL OUT [FLAGS...]
  local url=$1 out=$2; shift 2
  "$RETRACE" replay "$WORK/source.rtrace" --target "$url" -c 1 -o "$WORK/$out" "$@" >/dev/null 2>"$WORK/$out.err" \
    || { cat "$WORK/$out.err" >&2; fail "replay to $out"; }
}
run "$COLD_URL" base.rtrace
run "$WARM_URL" warm-up.rtrace --limit 12
run "$WARM_URL" cand.rtrace
status=0
"$RETRACE" diff --json "$WORK/base.rtrace" "$WORK/cand.rtrace" >"$WORK/cache.json" 2>/dev/null || status=$?
[[ $status == 1 ]] || fail "diff exited $status, expected 1 (the cache hits differ)"
python3 - "$WORK/cache.json" <<'PY' || fail "by_cache"
import json, sys
run = json.load(open(sys.argv[1]))["runs"][0]
groups = {b["cache"]: b for b in run["by_cache"]}
assert set(groups) == {"hit", "miss"}, run["by_cache"]
assert groups["hit"]["compared"] == 12 and groups["miss"]["compared"] == 12, groups
assert groups["miss"]["differing"] == 0 and groups["hit"]["differing"] >= 1, groups
assert groups["hit"]["differing"] == run["divergent"], (groups, run["divergent"])
assert run["by_preempted"] == [], run["by_preempted"]   # the sim exposes no preemptions counter
PY
"$RETRACE" diff "$WORK/base.rtrace" "$WORK/cand.rtrace" >"$WORK/cache.out" 2>&1 && fail "the terminal diff is identical"
check_contains "$WORK/cache.out" "prefix cache: " "the terminal report's cache sentence"
check_contains "$WORK/cache.out" "of 12 hits differ, 0 of 12 misses" "the terminal report's cache counts"
echo ok
