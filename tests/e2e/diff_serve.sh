#!/usr/bin/env bash
# The point of diff, end to end: the same greedy traffic replayed against `retrace serve` at
# concurrency 1 and 32 is identical without --batch-variance (exit 0) and differs with it (exit 1);
# every first divergent token diff reports is confirmed against the two traces' token lists.
. "$(dirname "$0")/lib.sh"

COUNT=32
import_numbered "$WORK/source.rtrace" $COUNT \
  '{"request":{"model":"retrace-sim","prompt":"Question %d: what should we do about the order?","max_tokens":64,"temperature":0,"ignore_eos":true,"logprobs":5,"stream":true}}' \
  --endpoint completions

replay() {  # URL CONCURRENCY OUT
  "$RETRACE" replay "$WORK/source.rtrace" --target "$1" -c "$2" -o "$WORK/$3" >/dev/null 2>"$WORK/$3.err" \
    || { cat "$WORK/$3.err" >&2; fail "replay to $3 at concurrency $2"; }
}

# Concurrency 1 flat out (no latency model: batch size 1 throughout); concurrency 32 with the
# default latency model, so that the requests overlap and share batches.
start_listening ALONE "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off
start_listening ALONE_VARIED "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off --batch-variance
start_listening FIXED "$RETRACE" serve --listen 127.0.0.1:0
start_listening VARIED "$RETRACE" serve --listen 127.0.0.1:0 --batch-variance
replay "$ALONE_URL" 1 fixed-c1.rtrace
replay "$FIXED_URL" 32 fixed-c32.rtrace
replay "$ALONE_VARIED_URL" 1 varied-c1.rtrace
replay "$VARIED_URL" 32 varied-c32.rtrace

status=0
"$RETRACE" diff "$WORK/fixed-c1.rtrace" "$WORK/fixed-c32.rtrace" >"$WORK/fixed.out" 2>&1 || status=$?
[[ $status == 0 ]] || { cat "$WORK/fixed.out" >&2; fail "without --batch-variance diff exited $status, expected 0"; }
check_contains "$WORK/fixed.out" "0 of $COUNT differ from baseline" "all aligned and identical"

status=0
"$RETRACE" diff --json "$WORK/varied-c1.rtrace" "$WORK/varied-c32.rtrace" >"$WORK/varied.json" 2>"$WORK/varied.err" || status=$?
[[ $status == 1 ]] || { cat "$WORK/varied.err" >&2; head -c 3000 "$WORK/varied.json" >&2; fail "with --batch-variance diff exited $status, expected 1"; }

"$RETRACE" export "$WORK/varied-c1.rtrace" >"$WORK/c1.jsonl" || fail "export c1"
"$RETRACE" export "$WORK/varied-c32.rtrace" >"$WORK/c32.jsonl" || fail "export c32"
python3 - "$WORK/varied.json" "$WORK/c1.jsonl" "$WORK/c32.jsonl" <<'PY' || fail "reported divergences do not match the traces"
import base64, json, sys
doc = json.load(open(sys.argv[1]))
def load(path):
    out = {}
    for line in open(path):
        record = json.loads(line)
        if "exchange" in record: out[record["exchange"]["id"]] = record["exchange"]
    return out
def raw(b):
    return base64.b64decode(b["base64"]) if isinstance(b, dict) else b.encode()
c1, c32 = load(sys.argv[2]), load(sys.argv[3])
run = doc["runs"][0]
assert run["errors"] == 0 and run["missing_in_candidate"] == 0 and run["missing_in_baseline"] == 0, run
assert run["divergent"] > 0 and run["divergent"] < run["aligned"], run
checked = 0
for pair in run["pairs"]:
    assert pair["verdict"] == "divergent", pair
    a, b = c1[pair["baseline_id"]], c32[pair["candidate_id"]]
    assert a["source_id"] == b["source_id"], (a["source_id"], b["source_id"])
    for d in pair["divergences"]:
        ta = a["choices"][d["choice"]]["tokens"]
        tb = b["choices"][d["choice"]]["tokens"]
        i, j = d["baseline_index"], d["candidate_index"]
        if d["basis"] == "token_ids":
            assert i == j
            assert [t["id"] for t in ta[:i]] == [t["id"] for t in tb[:i]], "ids before the divergence differ"
            assert i == len(ta) or i == len(tb) or ta[i]["id"] != tb[i]["id"], "ids at the divergence are equal"
        else:
            ba = b"".join(raw(t["bytes"]) for t in ta)
            bb = b"".join(raw(t["bytes"]) for t in tb)
            off = d["byte_offset"]
            assert ba[:off] == bb[:off] and ba[off:off + 1] != bb[off:off + 1], "byte offset is not the first difference"
            assert sum(len(raw(t["bytes"])) for t in ta[:i]) <= off < sum(len(raw(t["bytes"])) for t in ta[:i + 1]) or i == len(ta)
            assert sum(len(raw(t["bytes"])) for t in tb[:j]) <= off < sum(len(raw(t["bytes"])) for t in tb[:j + 1]) or j == len(tb)
        checked += 1
assert checked >= run["divergent"], (checked, run["divergent"])
print("confirmed %d divergences" % checked, file=sys.stderr)
PY

for pid in "$ALONE_PID" "$ALONE_VARIED_PID" "$FIXED_PID" "$VARIED_PID"; do stop "$pid" || fail "serve exited non-zero"; done
echo "diff_serve: ok"
