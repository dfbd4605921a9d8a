#!/usr/bin/env bash
# retrace study against llama-server, with one slot (-np 1) and with 32 (continuous batching):
# cold (cache_prompt false) and warm cells. What llama.cpp does here is whatever it does, so the
# test asserts the study's consistency, not a number of differences: the server is identified,
# every response reports its cached tokens (timings.cache_n), a cold cell that hit and a warm cell
# that did not are said to be so, the bounds follow from the counts, and the exit status says
# whether anything differed.
. "$(dirname "$0")/lib.sh"

"$RETRACE" import "$ROOT/traces/gold-intents.jsonl" --out "$WORK/gold.rtrace" 2>/dev/null

study() {  # study URL NAME LEVELS: the study's exit status in $status, its summary in $WORK/NAME.json
  status=0
  "$RETRACE" study "$WORK/gold.rtrace" --target "$1" --limit 8 -c "$3" --cache cold,warm --repeat 1 \
    --timeout 10m --json --out "$WORK/$2" >"$WORK/$2.json" 2>"$WORK/$2.err" || status=$?
  [[ $status == 0 || $status == 1 ]] || { cat "$WORK/$2.err" >&2; fail "$2: study exit $status, want 0 or 1"; }
  local S="$WORK/$2.json"
  check_eq "$(json "$S" 's.server.kind')" "llama.cpp" "$2: the preflight identified llama.cpp"
  check_eq "$(json "$S" 's.differs')" "$([[ $status == 1 ]] && echo true || echo false)" "$2: exit 1 exactly when outputs differ"
  check_eq "$(json "$S" 's.errors')" "0" "$2: no request failed"
  check_eq "$(json "$S" 's.cells.filter(c=>c.cache=="cold").map(c=>c.cache_method).join()')" \
    "$(json "$S" 's.cells.filter(c=>c.cache=="cold").map(()=>"cache_prompt false on every request").join()')" \
    "$2: cold by cache_prompt false"
  python3 - "$S" "$2" <<'PY' || fail "$2: the study's figures are not consistent"
import json, math, sys
summary, name = json.load(open(sys.argv[1])), sys.argv[2]

def upper(k, n):  # one-sided 95 % Clopper-Pearson, by bisection on the binomial CDF
    if n == 0: return None
    if k >= n: return 1.0
    cdf = lambda p: sum(math.comb(n, i) * p**i * (1 - p)**(n - i) for i in range(k + 1))
    low, high = k / n, 1.0
    for _ in range(100):
        mid = (low + high) / 2
        (low, high) = (mid, high) if cdf(mid) > 0.05 else (low, mid)
    return high

for cell in summary["cells"]:
    where = f'{name} {cell["name"]}'
    cached = cell["cached"]
    assert cached["exchanges"] == cell["compared"] == cell["requests"] * cell["runs"], (where, cell)
    assert cached["reported"] == cached["exchanges"], f"{where}: llama.cpp reports timings.cache_n on every response: {cached}"
    if cell["cache"] == "cold":
        assert (cached["hits"] > 0) == ("not wholly cold" in cell["cache_note"]), (where, cached, cell["cache_note"])
    else:
        assert (cached["hits"] == 0) == ("not warm" in cell["cache_note"]), (where, cached, cell["cache_note"])
    assert abs(cell["differing_rate_upper95"] - upper(cell["differing"], cell["compared"])) < 1e-6, (where, cell)
    assert cell["near_ties"] + cell["real_changes"] + cell["unclassified"] == cell["differing"], (where, cell)
    assert len(cell["first_divergence_positions"]) == cell["differing"], (where, cell)
    assert 1 <= cell["unique_completions"]["max"] <= cell["runs"], (where, cell)
total = sum(c["compared"] for c in summary["cells"]), sum(c["differing"] for c in summary["cells"])
assert (summary["compared"], summary["differing"]) == total, (summary["compared"], summary["differing"], total)
assert f'{summary["differing"]} of {summary["compared"]} differed' in summary["scope"], summary["scope"]
assert "served by llama.cpp" in summary["scope"], summary["scope"]
print(f'{name}: {summary["differing"]} of {summary["compared"]} outputs differed; warm hits ' +
      ",".join(str(c["cached"]["hits"]) for c in summary["cells"] if c["cache"] == "warm"), file=sys.stderr)
PY
}

start_llama ONE -np 1 -c 2048
study "$ONE_URL" one-slot 1
"$LLAMA" stop "$WORK/ONE.pid"  # free the cores for the next server

start_llama MANY -np 32 -c 16384
study "$MANY_URL" many-slots 1,8
echo "PASS real.study_llama"
