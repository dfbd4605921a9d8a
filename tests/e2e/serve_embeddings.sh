# Embeddings end to end against `retrace serve`: replayed twice against the same server they are
# identical; against --batch-variance, whose vectors move by a float32 ulp when inputs share a
# request, diff reports the largest difference, exits 1, and --embedding-tolerance above it
# makes them identical (exit 0). Floats and base64 decode to the same float32 values.
. "$(dirname "$0")/lib.sh"

{
  printf '{"custom_id":"one","method":"POST","url":"/v1/embeddings","body":{"model":"retrace-sim","input":["alpha beta","gamma"]}}\n'
  printf '{"custom_id":"two","method":"POST","url":"/v1/embeddings","body":{"model":"retrace-sim","input":"delta","encoding_format":"base64"}}\n'
  printf '{"custom_id":"three","method":"POST","url":"/v1/embeddings","body":{"model":"retrace-sim","input":"delta"}}\n'
} >"$WORK/batch.jsonl"
"$RETRACE" import "$WORK/batch.jsonl" --from openai-batch --out "$WORK/source.rtrace" >/dev/null || fail "import"

start_listening plain "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off
start_listening varied "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off --batch-variance
replay() {  # URL OUT
  "$RETRACE" replay "$WORK/source.rtrace" --target "$1" -c 1 -o "$WORK/$2" >/dev/null 2>"$WORK/$2.err" \
    || { cat "$WORK/$2.err" >&2; fail "replay to $2"; }
}
replay "$plain_URL" a.rtrace
replay "$plain_URL" b.rtrace
replay "$varied_URL" varied.rtrace

"$RETRACE" export "$WORK/a.rtrace" >"$WORK/a.jsonl"
python3 - "$WORK/a.jsonl" <<'PY' || fail "the vectors decoded"
import json, sys
exchanges = [json.loads(l)["exchange"] for l in open(sys.argv[1]) if '"exchange"' in l]
assert [len(e["choices"]) for e in exchanges] == [2, 1, 1], [e["choices"] for e in exchanges]
for e in exchanges:
    assert e["decode_note"] in ("", None), e["decode_note"]
    for c in e["choices"]:
        assert c["part"] == "embedding" and len(c["values"]) == 16, c
        assert abs(sum(v * v for v in c["values"]) - 1) < 1e-5
# base64 and floats of the same input: the same float32 values, as far as the shortest decimal
# of a float32 names it (the trace keeps each as sent)
encoded, decimal = exchanges[1]["choices"][0]["values"], exchanges[2]["choices"][0]["values"]
assert all(abs(a - b) <= 1e-7 * abs(b) for a, b in zip(encoded, decimal)), (encoded, decimal)
PY

status=0
"$RETRACE" diff "$WORK/a.rtrace" "$WORK/b.rtrace" >"$WORK/same.txt" || status=$?
check_eq "$status" 0 "the same server twice is identical"

status=0
"$RETRACE" diff "$WORK/a.rtrace" "$WORK/varied.rtrace" --json >"$WORK/varied.json" || status=$?
check_eq "$status" 1 "batch-dependent vectors differ"
largest=$(python3 - "$WORK/varied.json" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))["runs"][0]
assert run["matrix"] == "D..", run["matrix"]
divergences = run["pairs"][0]["divergences"]
assert [d["part"] for d in divergences] == ["embedding", "embedding"], divergences
largest = max(d["largest_difference"] for d in divergences)
assert 0 < largest < 1e-6, largest
print(largest)
PY
) || fail "the embedding divergences"
status=0
"$RETRACE" diff "$WORK/a.rtrace" "$WORK/varied.rtrace" --embedding-tolerance 1e-6 >"$WORK/tolerant.txt" || status=$?
check_eq "$status" 0 "within --embedding-tolerance the vectors are identical (largest difference $largest)"
echo "ok"
