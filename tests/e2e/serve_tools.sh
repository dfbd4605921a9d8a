# `retrace serve` answers a chat request with "tools" with a call of its first function, streamed
# as vLLM streams tool calls (the name first, the arguments in pieces, finish_reason tool_calls)
# and whole; record-side decoding keeps the call apart from the answer: the streamed and whole
# runs are identical, and against the same questions without tools diff names both parts.
. "$(dirname "$0")/lib.sh"

tools='"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]'
import_numbered "$WORK/tools.rtrace" 3 \
  '{"request":{"model":"retrace-sim","messages":[{"role":"user","content":"Weather %d?"}],"max_tokens":8,"temperature":0,"ignore_eos":true,'"$tools"'}}' \
  --endpoint chat
sed 's/,"tools":.*}]}}$/}}/' "$WORK/tools.jsonl" >"$WORK/plain.jsonl"
grep -q tools "$WORK/plain.jsonl" && fail "the plain questions still name tools"
"$RETRACE" import "$WORK/plain.jsonl" --out "$WORK/plain.rtrace" --endpoint chat >/dev/null || fail "import plain"

start_listening sim "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off
replay() {  # INPUT OUT [FLAGS...]
  local input=$1 out=$2; shift 2
  "$RETRACE" replay "$WORK/$input" --target "$sim_URL" -c 1 -o "$WORK/$out" "$@" >/dev/null 2>"$WORK/$out.err" \
    || { cat "$WORK/$out.err" >&2; fail "replay to $out"; }
}
replay tools.rtrace streamed.rtrace
replay tools.rtrace whole.rtrace --no-stream
replay plain.rtrace plain-run.rtrace

for run in streamed whole; do
  "$RETRACE" export "$WORK/$run.rtrace" >"$WORK/$run.jsonl"
  python3 - "$WORK/$run.jsonl" <<'PY' || fail "the $run tool calls"
import json, sys
exchanges = [json.loads(l)["exchange"] for l in open(sys.argv[1]) if '"exchange"' in l]
assert len(exchanges) == 3
for e in exchanges:
    assert e["decode_note"] in ("", None), e["decode_note"]
    parts = [(c.get("part", "content"), c.get("tool_name")) for c in e["choices"]]
    assert parts == [("content", None), ("tool_call", "get_weather")], parts
    content, call = e["choices"]
    assert content["tokens"] == [], content
    assert all(c["finish_reason"] == "tool_calls" for c in e["choices"]), e["choices"]
    arguments = json.loads("".join(t["bytes"] for t in call["tokens"]))
    assert list(arguments) == ["text"] and arguments["text"], arguments
PY
done

status=0
"$RETRACE" diff "$WORK/streamed.rtrace" "$WORK/whole.rtrace" >"$WORK/same.txt" || status=$?
check_eq "$status" 0 "a tool call streamed and whole is identical"

status=0
"$RETRACE" diff "$WORK/plain-run.rtrace" "$WORK/streamed.rtrace" --json >"$WORK/call.json" || status=$?
check_eq "$status" 1 "a call is not the same answer as text"
python3 - "$WORK/call.json" <<'PY' || fail "diff names the answer and the call"
import json, sys
run = json.load(open(sys.argv[1]))["runs"][0]
assert run["divergent"] == 3, run["matrix"]
for pair in run["pairs"]:
    assert pair["parts_changed"] == "answer changed first, then tool call 0 (get_weather)", pair["parts_changed"]
PY
echo "ok"
