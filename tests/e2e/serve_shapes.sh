# `retrace serve` answers the Responses API (/v1/responses) and Anthropic's Messages API
# (/v1/messages), streamed and whole, with --reasoning and tools, in the shapes of the real servers'
# bytes in tests/data/openai and tests/data/anthropic (every event type and item the corpus has, with
# the same fields). Recorded through `retrace record`, replayed against the same server (identical)
# and against one whose reasoning is one token longer: diff names the reasoning as the part that
# changed first; stats counts their output tokens, reasoning tokens and TTFT.
. "$(dirname "$0")/lib.sh"

start_listening four "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off --reasoning 4
start_listening five "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off --reasoning 5
start_listening proxy "$RETRACE" record --upstream "$four_URL" --out "$WORK/rec.rtrace" --listen 127.0.0.1:0

post() {  # post NAME PATH BODY: through the proxy; the answer must be 200
  local status
  status=$(curl -sS -o "$WORK/$1.out" -w '%{http_code}' -H 'Content-Type: application/json' \
    --data-binary "$3" "$proxy_URL$2") || fail "POST $2 through the proxy"
  [[ "$status" == 200 ]] || { cat "$WORK/$1.out" >&2; fail "POST $2 ($1): status $status"; }
}
common='"model":"retrace-sim","temperature":0,"ignore_eos":true'
responses_tool='"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}}]'
messages_tool='"tools":[{"name":"get_weather","input_schema":{"type":"object"}}]'
for stream in true false; do
  post "responses-$stream" /v1/responses "{$common,\"input\":\"Question one?\",\"max_output_tokens\":12,\"stream\":$stream}"
  post "responses-tool-$stream" /v1/responses \
    "{$common,\"instructions\":\"Be brief.\",\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"Weather?\"}]}],\"max_output_tokens\":12,\"stream\":$stream,$responses_tool}"
  post "messages-$stream" /v1/messages \
    "{$common,\"system\":\"Be brief.\",\"messages\":[{\"role\":\"user\",\"content\":\"Question two?\"}],\"max_tokens\":12,\"stream\":$stream}"
  post "messages-tool-$stream" /v1/messages \
    "{$common,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Weather?\"}]}],\"max_tokens\":12,\"stream\":$stream,$messages_tool}"
done
stop "$proxy_PID" || fail "record did not exit 0 on SIGTERM"
check_contains "$WORK/proxy.err" "recorded 8 exchange(s)" "every exchange recorded"

# The bytes' shape: every event type (and item, block, delta type) the corpus shows has the fields
# the corpus has; the whole bodies' items and blocks too.
python3 - "$WORK" "$ROOT/tests/data" <<'PY' || fail "the answers have the corpus' shape"
import json, sys
work, data = sys.argv[1], sys.argv[2]

def events(text):
    out = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.split("\n"))
        event = json.loads(lines["data"])
        assert lines["event"] == event["type"], (lines["event"], event["type"])
        out.append(event)
    return out

INNER = ("item", "part", "delta", "content_block", "message", "response")
def shapes(event):
    """(name, keys) of an event and of its nested objects, named by their "type" where they have one."""
    # An answer cut at max_output_tokens ends with response.incomplete, the same shape as .completed.
    name = event["type"].replace("response.incomplete", "response.completed")
    found = [(name, frozenset(event))]
    for key in INNER:
        inner = event.get(key)
        if isinstance(inner, dict):
            found.append((name + "." + key + ":" + str(inner.get("type", "")), frozenset(inner)))
    return found

def compare(ours, corpus, what):
    theirs = {}
    for event in corpus:
        for name, keys in shapes(event):
            theirs.setdefault(name, set()).add(keys)
    seen = set()
    for event in ours:
        for name, keys in shapes(event):
            seen.add(name)
            if name in theirs:
                assert keys in theirs[name], (what, name, sorted(keys), [sorted(k) for k in theirs[name]])
    missing = {n for n in theirs if not n.startswith("ping")} - seen
    return missing

responses = events(open(f"{data}/openai/responses-stream.sse").read())
missing = set.intersection(*[compare(events(open(f"{work}/{name}-true.out").read()), responses, name)
                             for name in ("responses", "responses-tool")])
# The corpus' one answer has text and a call; ours has one or the other, so together they cover it.
assert not missing, missing
anthropic = sum((events(open(f"{data}/anthropic/messages-stream-{k}.sse").read()) for k in ("text", "thinking", "tool")), [])
missing = set.intersection(*[compare(events(open(f"{work}/{name}-true.out").read()), anthropic, name)
                             for name in ("messages", "messages-tool")])
missing -= {"content_block_delta.delta:signature_delta"}  # no signatures here
assert not missing, missing

def items(body, key):
    return {(x["type"], frozenset(x)) for x in body[key]}
corpus = json.load(open(f"{data}/openai/responses-nonstream.json"))
for name in ("responses", "responses-tool"):
    body = json.load(open(f"{work}/{name}-false.out"))
    assert set(body) == set(corpus), (set(body) ^ set(corpus))
    assert items(body, "output") <= items(corpus, "output"), (items(body, "output"), items(corpus, "output"))
    assert set(body["usage"]) == set(corpus["usage"])
corpus = json.load(open(f"{data}/anthropic/messages-nonstream.json"))
for name in ("messages", "messages-tool"):
    body = json.load(open(f"{work}/{name}-false.out"))
    assert set(body) == set(corpus), (set(body) ^ set(corpus))
    assert items(body, "content") <= items(corpus, "content"), (items(body, "content"), items(corpus, "content"))
tool = json.load(open(f"{work}/messages-tool-false.out"))
assert [b["type"] for b in tool["content"]] == ["thinking", "tool_use"] and tool["stop_reason"] == "tool_use", tool
assert set(tool["content"][1]["input"]) == {"text"}, tool["content"][1]
PY

# Recorded: each part apart, no decode note, usage read.
"$RETRACE" export "$WORK/rec.rtrace" >"$WORK/rec.jsonl"
python3 - "$WORK/rec.jsonl" <<'PY' || fail "the recording's parts"
import json, sys
exchanges = [json.loads(line)["exchange"] for line in open(sys.argv[1]) if '"exchange"' in line]
assert len(exchanges) == 8, len(exchanges)
for e in exchanges:
    what = (e["request"]["target"], e["response"]["streamed"])
    assert e["error"]["kind"] == "none" and e["decode_note"] in ("", None), (what, e["error"], e["decode_note"])
    # (The Responses decoder keeps an answer's finish reason on its content part, which a call's
    # answer leaves without tokens.)
    parts = [(c.get("part", "content"), c.get("tool_name", "")) for c in e["choices"] if c["tokens"]]
    tool = "tools" in json.loads(e["request"]["body"])
    assert parts == [("reasoning", ""), ("tool_call", "get_weather") if tool else ("content", "")], (what, parts)
    assert e["usage"]["completion_tokens"] == 12, (what, e["usage"])
    # The Responses API counts reasoning tokens in its usage; the Messages API does not.
    assert e["usage"].get("reasoning_tokens") == (4 if what[0] == "/v1/responses" else None), (what, e["usage"])
PY

for run in four five; do
  url_var="${run}_URL"
  "$RETRACE" replay "$WORK/rec.rtrace" --target "${!url_var}" -c 2 -o "$WORK/$run.rtrace" >/dev/null 2>"$WORK/$run.err" \
    || { cat "$WORK/$run.err" >&2; fail "replay against --reasoning of $run"; }
done

status=0
"$RETRACE" diff "$WORK/rec.rtrace" "$WORK/four.rtrace" >"$WORK/same.txt" || status=$?
check_eq "$status" 0 "a replay against the same server is identical"
check_contains "$WORK/same.txt" "identical 8" "all eight compared and identical"

status=0
"$RETRACE" diff "$WORK/rec.rtrace" "$WORK/five.rtrace" --json >"$WORK/moved.json" || status=$?
check_eq "$status" 1 "a reasoning one token longer is a change"
python3 - "$WORK/moved.json" <<'PY' || fail "diff names the part that changed first"
import json, sys
run = json.load(open(sys.argv[1]))["runs"][0]
assert run["divergent"] == 8 and run.get("not_compared", 0) == 0, run["matrix"]
for pair in run["pairs"]:
    first = pair["divergences"][0]
    assert first["part"] == "reasoning", pair["divergences"]
    assert pair["parts_changed"].startswith("reasoning changed first, then "), pair["parts_changed"]
    # The candidate's reasoning is one token longer: one streamed event more, or a longer whole text.
    longer = first["candidate_tokens"] == first["baseline_tokens"] + 1 or \
        first.get("candidate_bytes", 0) > first.get("baseline_bytes", 0)
    assert longer, first
PY

"$RETRACE" stats "$WORK/rec.rtrace" --json >"$WORK/stats.json" || fail "stats"
python3 - "$WORK/stats.json" <<'PY' || fail "stats counts their tokens and times the streamed ones"
import json, sys
stats = json.load(open(sys.argv[1]))
assert stats["output_tokens"] == 8 * 12, stats["output_tokens"]
# Reasoning: the Responses API's usage says 4 for each of its 4 answers; the Messages API's usage
# has no such count, so stats counts the thinking pieces: 4 streamed deltas, or 1 whole block.
assert stats["reasoning_tokens"] == 4 * 4 + 2 * 4 + 2 * 1, stats["reasoning_tokens"]
assert stats["ttft_ms"]["count"] == 4, stats["ttft_ms"]
assert stats["ttfot_ms"]["count"] == 4, stats["ttfot_ms"]
PY
echo "ok"
