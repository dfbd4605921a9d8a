#!/usr/bin/env bash
# retrace diff on hand-made traces: exit codes under each --fail-on, --json, --markdown, errors,
# missing exchanges, re-chunked identical text, N-way and --expect.
. "$(dirname "$0")/lib.sh"

# Traces are written as `retrace export` lines and turned into traces by `retrace import`.

python3 - "$WORK" <<'PY'
import json, sys, os
work = sys.argv[1]
words = ["The", " answer", " is", " Paris", ".", " It", " is", " the", " capital", "."]

def tok(text, tid, lp=None, top=None):
    t = {"id": tid, "bytes": text}
    if lp is not None: t["logprob"] = lp
    if top is not None: t["top"] = [{"id": i, "bytes": b, "logprob": l} for i, b, l in top]
    return t

def exchange(i, tokens, kind="text_deltas", **extra):
    e = {"id": i, "key": "%032x" % (0xabc000 + i),
         "choices": [{"index": 0, "kind": kind, "tokens": tokens, "finish_reason": "stop"}]}
    e.update(extra)
    return e

def base_tokens():
    return [tok(w, -1) for w in words]

def write(name, exchanges):
    with open(os.path.join(work, name + ".jsonl"), "w") as f:
        f.write(json.dumps({"header": {"source": "recorded"}}) + "\n")
        for e in exchanges: f.write(json.dumps({"exchange": e}) + "\n")

base = [exchange(i, base_tokens(), expected="Paris") for i in range(5)]
write("base", base)
# Same text, coalesced differently (and one multi-token delta): identical.
rechunked = []
for i in range(5):
    text = "".join(words)
    rechunked.append(exchange(i, [tok(text[:7], -1), tok(text[7:20], -1), tok(text[20:], -1)]))
write("same", rechunked)
# Exchange 2: near-tie flip at token 3; exchange 3: a real change at token 5.
div = [exchange(i, base_tokens()) for i in range(5)]
div[2]["choices"][0]["tokens"][3] = tok(" Lyon", -1, -0.70, [(-1, " Lyon", -0.70), (-1, " Paris", -0.71)])
div[3]["choices"][0]["tokens"][5] = tok(" We", -1, -0.1, [(-1, " We", -0.1), (-1, " It", -3.0)])
write("div", div)
near = [exchange(i, base_tokens()) for i in range(5)]
near[2]["choices"][0]["tokens"][3] = tok(" Lyon", -1, -0.70, [(-1, " Lyon", -0.70), (-1, " Paris", -0.71)])
write("near", near)
# Exchange 1 failed, exchange 4 never ran.
err = [exchange(i, base_tokens()) for i in range(4)]
err[1]["error"] = {"kind": "timeout", "message": "no response within 30 s"}
err[1]["choices"] = []
write("err", err)
PY
for name in base same div near err; do
  "$RETRACE" import "$WORK/$name.jsonl" --out "$WORK/$name.rtrace" 2>"$WORK/import.err" \
    || { cat "$WORK/import.err" >&2; fail "could not import $name.jsonl"; }
done

run() {  # expected-exit out-file args...
  local expected=$1 out=$2; shift 2
  local status=0
  "$RETRACE" diff "$@" >"$out" 2>"$out.err" || status=$?
  [[ $status == "$expected" ]] || { cat "$out" "$out.err" >&2; fail "retrace diff $* exited $status, expected $expected"; }
}

run 0 "$WORK/same.out" "$WORK/base.rtrace" "$WORK/same.rtrace"
check_contains "$WORK/same.out" "0 of 5 differ from baseline" "identical text chunked differently"

run 1 "$WORK/div.out" "$WORK/base.rtrace" "$WORK/div.rtrace"
check_contains "$WORK/div.out" "2 of 5 differ from baseline" "two divergent outputs"
check_contains "$WORK/div.out" "[[ Paris]]" "the baseline's divergent token is marked"
check_contains "$WORK/div.out" "[[ Lyon]]" "the candidate's divergent token is marked"
check_contains "$WORK/div.out" "near-tie" "near-tie classification shown"
check_contains "$WORK/div.out" "real change" "real change classification shown"
if grep -q $'\x1b\[' "$WORK/div.out"; then fail "colour codes written to a pipe"; fi

run 1 "$WORK/real.out" --fail-on real "$WORK/base.rtrace" "$WORK/div.rtrace"
run 0 "$WORK/near-real.out" --fail-on real "$WORK/base.rtrace" "$WORK/near.rtrace"
run 1 "$WORK/near-any.out" --fail-on any "$WORK/base.rtrace" "$WORK/near.rtrace"
run 0 "$WORK/none.out" --fail-on none "$WORK/base.rtrace" "$WORK/div.rtrace"
run 0 "$WORK/tolerate.out" --max-divergent 2 "$WORK/base.rtrace" "$WORK/div.rtrace"
run 1 "$WORK/tolerate1.out" --max-divergent 1 "$WORK/base.rtrace" "$WORK/div.rtrace"

run 1 "$WORK/div.json" --json "$WORK/base.rtrace" "$WORK/div.rtrace"
python3 - "$WORK/div.json" <<'PY' || fail "--json content"
import json, sys
doc = json.load(open(sys.argv[1]))
run = doc["runs"][0]
assert run["divergent"] == 2 and run["identical"] == 3, run
assert run["matrix"] == "..DD.", run["matrix"]
pairs = {p["baseline_id"]: p for p in run["pairs"]}
d2 = pairs[2]["divergences"][0]
assert (d2["baseline_index"], d2["candidate_index"]) == (3, 3), d2
assert d2["baseline_token"]["text"] == " Paris" and d2["candidate_token"]["text"] == " Lyon"
assert d2["classification"] == "near_tie" and abs(d2["margin"] - 0.01) < 1e-4, d2
d3 = pairs[3]["divergences"][0]
assert (d3["baseline_index"], d3["candidate_index"]) == (5, 5) and d3["classification"] == "real_change", d3
assert d3["byte_offset"] == len("The answer is Paris. "), d3  # " We" vs " It": the space is shared
assert abs(d3["margin"] - 2.9) < 1e-4 and not d3["margin_is_lower_bound"], d3
assert doc["exit_code"] == 1
PY

run 1 "$WORK/div.md" --markdown "$WORK/base.rtrace" "$WORK/div.rtrace"
check_contains "$WORK/div.md" "| run | differ |" "Markdown table"
check_contains "$WORK/div.md" "<details>" "Markdown divergence details"

run 1 "$WORK/err.json" --json "$WORK/base.rtrace" "$WORK/err.rtrace"
python3 - "$WORK/err.json" <<'PY' || fail "errors and missing in --json"
import json, sys
run = json.load(open(sys.argv[1]))["runs"][0]
assert run["errors"] == 1 and run["missing_in_candidate"] == 1 and run["identical"] == 3, run
assert run["matrix"] == ".E..M", run["matrix"]
error = [p for p in run["pairs"] if p["verdict"] == "error"][0]
assert "candidate: timeout" in error["error"], error
PY
run 1 "$WORK/err.out" "$WORK/base.rtrace" "$WORK/err.rtrace"
check_contains "$WORK/err.out" "missing in the candidate" "missing exchange listed"

# N-way: three candidates, and expected answers from the baseline.
run 1 "$WORK/nway.out" --expect --match contains "$WORK/base.rtrace" "$WORK/same.rtrace" "$WORK/div.rtrace" "$WORK/near.rtrace"
check_contains "$WORK/nway.out" "across runs" "N-way section"
check_contains "$WORK/nway.out" "4 of 5 match expected" "gold matching of the divergent run"
check_contains "$WORK/nway.out" "5 of 5 match expected" "gold matching of an identical run"
run 1 "$WORK/nway.json" --json "$WORK/base.rtrace" "$WORK/same.rtrace" "$WORK/div.rtrace" "$WORK/near.rtrace"
python3 - "$WORK/nway.json" <<'PY' || fail "N-way groups in --json"
import json, sys
across = json.load(open(sys.argv[1]))["across_runs"]
assert across["requests_by_distinct_completions"] == {"1": 3, "2": 2}, across
groups = {r["baseline_id"]: r["groups"] for r in across["requests"]}
assert len(groups[2]) == 2 and len(groups[2][1]) == 2, groups  # div and near share " Lyon"
PY

# Errors: a missing file, a file that is not a trace, a bad matcher.
run 2 "$WORK/nofile.out" "$WORK/base.rtrace" "$WORK/absent.rtrace"
head -c 3000 /dev/urandom >"$WORK/garbage.rtrace"
run 2 "$WORK/garbage.out" "$WORK/base.rtrace" "$WORK/garbage.rtrace"
check_contains "$WORK/garbage.out.err" "garbage.rtrace" "the error names the bad file"
run 2 "$WORK/badmatch.out" --expect --match 'regex:(' "$WORK/base.rtrace" "$WORK/same.rtrace"
echo "ok"
