# `retrace serve --reasoning N` answers chat as a reasoning model behind vLLM's reasoning parser
# does, and diff sees what a joined comparison could not: the same tokens with the boundary between
# reasoning and answer moved by one token are a change, reported part by part; the same boundary
# is identical. stats counts the reasoning tokens apart and times the first answer token (TTFOT).
# A live session sends the earlier turns' answers back without their reasoning, as clients do.
. "$(dirname "$0")/lib.sh"

import_numbered "$WORK/source.rtrace" 4 \
  '{"request":{"model":"retrace-sim","messages":[{"role":"user","content":"Question %d: why?"}],"max_tokens":12,"temperature":0,"ignore_eos":true}}' \
  --endpoint chat

start_listening four "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off --reasoning 4
start_listening five "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off --reasoning 5
for run in four five; do
  url_var="${run}_URL"
  "$RETRACE" replay "$WORK/source.rtrace" --target "${!url_var}" -c 1 -o "$WORK/$run.rtrace" >/dev/null 2>"$WORK/$run.err" \
    || { cat "$WORK/$run.err" >&2; fail "replay against --reasoning of $run"; }
done
"$RETRACE" replay "$WORK/source.rtrace" --target "$four_URL" -c 1 --no-stream -o "$WORK/whole.rtrace" >/dev/null \
  2>"$WORK/whole.err" || { cat "$WORK/whole.err" >&2; fail "replay not streamed"; }

"$RETRACE" export "$WORK/four.rtrace" >"$WORK/four.jsonl"
python3 - "$WORK/four.jsonl" <<'PY' || fail "the streamed answers have a reasoning part of 4 tokens"
import json, sys
exchanges = [json.loads(l)["exchange"] for l in open(sys.argv[1]) if '"exchange"' in l]
assert len(exchanges) == 4
for e in exchanges:
    parts = [c.get("part", "content") for c in e["choices"]]
    assert parts == ["reasoning", "content"], parts
    assert e["usage"]["reasoning_tokens"] == 4, e["usage"]
    reasoning, content = e["choices"]
    assert reasoning["tokens"] and content["tokens"], e["choices"]
    assert reasoning["tokens"][-1]["offset_ns"] <= content["tokens"][0]["offset_ns"]
PY

status=0
"$RETRACE" diff "$WORK/four.rtrace" "$WORK/whole.rtrace" >"$WORK/same.txt" || status=$?
check_eq "$status" 0 "the same boundary streamed and whole is identical"

status=0
"$RETRACE" diff "$WORK/four.rtrace" "$WORK/five.rtrace" --json >"$WORK/moved.json" || status=$?
check_eq "$status" 1 "a boundary moved by one token is a change"
python3 - "$WORK/moved.json" <<'PY' || fail "the moved boundary, part by part"
import json, sys
run = json.load(open(sys.argv[1]))["runs"][0]
assert run["divergent"] == 4, run["matrix"]
for pair in run["pairs"]:
    assert pair["parts_changed"] == "reasoning changed first, then answer", pair["parts_changed"]
    reasoning, answer = pair["divergences"]
    assert reasoning["part"] == "reasoning" and answer["part"] == "content", pair["divergences"]
    # The reasoning has one token more on the candidate, the answer one fewer.
    assert reasoning["candidate_tokens"] >= reasoning["baseline_tokens"], reasoning
    assert answer["baseline_index"] == 0 and answer["candidate_index"] == 0, answer
PY

"$RETRACE" stats "$WORK/four.rtrace" --json >"$WORK/stats.json" || fail "stats"
python3 - "$WORK/stats.json" <<'PY' || fail "stats counts reasoning apart and has TTFOT"
import json, sys
stats = json.load(open(sys.argv[1]))
assert stats["reasoning_tokens"] == 16, stats["reasoning_tokens"]
assert stats["output_tokens"] == 48, stats["output_tokens"]
assert stats["ttfot_ms"]["count"] == 4, stats["ttfot_ms"]
assert stats["ttfot_ms"]["mean"] >= stats["ttft_ms"]["mean"], (stats["ttfot_ms"], stats["ttft_ms"])
PY
"$RETRACE" stats "$WORK/four.rtrace" >"$WORK/stats.txt" || fail "stats text"
check_contains "$WORK/stats.txt" "reasoning tokens" "the text report names the reasoning tokens"
check_contains "$WORK/stats.txt" "TTFOT" "the text report has TTFOT"
# A two-turn session in export lines: turn 1 carries a recorded assistant answer.
"$RETRACE" export "$WORK/source.rtrace" >"$WORK/source.jsonl"
python3 - "$WORK/source.jsonl" "$WORK/session.jsonl" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
out = [lines[0]]
for turn in range(2):
    exchange = json.loads(json.dumps(lines[1]["exchange"]))
    exchange["id"], exchange["session_id"], exchange["key"] = turn + 1, "s0", None
    messages = [{"role": "user", "content": "Question 0: why?"}]
    if turn == 1:
        messages += [{"role": "assistant", "content": "RECORDED"}, {"role": "user", "content": "And then?"}]
    exchange["request"]["body"] = json.dumps({"model": "retrace-sim", "messages": messages, "max_tokens": 8,
                                              "temperature": 0, "ignore_eos": True})
    out.append({"exchange": exchange})
open(sys.argv[2], "w").write("".join(json.dumps(o) + "\n" for o in out))
PY
"$RETRACE" import "$WORK/session.jsonl" --from export --out "$WORK/session.rtrace" >/dev/null || fail "import the session"
"$RETRACE" replay "$WORK/session.rtrace" --target "$four_URL" -c 1 --session-mode live -o "$WORK/live.rtrace" \
  >/dev/null 2>"$WORK/live.err" || { cat "$WORK/live.err" >&2; fail "live session replay"; }
"$RETRACE" export "$WORK/live.rtrace" >"$WORK/live.jsonl"
python3 - "$WORK/live.jsonl" <<'PY' || fail "the live turn carries the answer, not the reasoning"
import json, sys
exchanges = [json.loads(l)["exchange"] for l in open(sys.argv[1]) if '"exchange"' in l]
first, second = exchanges
text = lambda choice: "".join(token["text"] if "text" in token else token["bytes"] for token in choice["tokens"])
reasoning = text(first["choices"][0])
answer = text(first["choices"][1])
assert first["choices"][0]["part"] == "reasoning" and reasoning and answer, first["choices"]
sent = json.loads(second["request"]["body"])["messages"][1]
assert sent == {"role": "assistant", "content": answer}, (sent, reasoning, answer)
PY
echo "ok"
