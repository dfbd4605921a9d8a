# The production shapes end to end: an upstream answers with the documented bytes of vLLM's chat
# reasoning and tool calls, the Responses API, the Messages API and embeddings, and the chat tool
# calls and reasoning of SGLang, TGI and OpenAI, streamed and whole (tests/data/, sent split into
# 7-byte pieces); record records them, replay sends them again to an upstream whose
# answers differ by one token in one part, and diff finds that token and names its part; what it
# cannot compare it says it did not compare, and exits 1. stats counts the reasoning apart.
. "$(dirname "$0")/lib.sh"
UPSTREAM="$ROOT/tests/e2e/shapes_upstream.py"

start_listening original python3 "$UPSTREAM" 0
start_listening variant python3 "$UPSTREAM" 0 --variant
start_listening proxy "$RETRACE" record --upstream "$original_URL" --out "$WORK/rec.rtrace" --listen 127.0.0.1:0

post() {  # post PATH BODY: through the proxy; the answer must be 200
  local status
  status=$(curl -sS -o "$WORK/answer" -w '%{http_code}' -H 'Content-Type: application/json' \
    --data-binary "$2" "$proxy_URL$1") || fail "POST $1 through the proxy"
  check_eq "$status" 200 "POST $1 status"
}
user='"messages":[{"role":"user","content":"What is 6*7?"}]'
post /v1/chat/completions "{\"model\":\"m\",$user,\"stream\":true}"
post /v1/chat/completions "{\"model\":\"m\",$user,\"stream\":true,\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"parameters\":{}}}]}"
post /v1/responses '{"model":"m","input":"Weather in Paris?","stream":true}'
post /v1/responses '{"model":"m","input":"Weather in Paris?"}'
post /v1/messages "{\"model\":\"m\",\"max_tokens\":64,$user,\"stream\":true}"
post /v1/embeddings '{"model":"m","input":"hello"}'
post /v1/rerank '{"model":"m","query":"q","documents":["a"]}'
tools='"tools":[{"type":"function","function":{"name":"get_current_weather","parameters":{}}}]'
post /v1/chat/completions "{\"model\":\"m\",\"user\":\"sglang\",$user,\"stream\":true}"
post /v1/chat/completions "{\"model\":\"m\",\"user\":\"sglang\",$user,\"stream\":true,$tools}"
post /v1/chat/completions "{\"model\":\"m\",\"user\":\"tgi\",$user,\"stream\":true,$tools}"
post /v1/chat/completions "{\"model\":\"m\",\"user\":\"tgi-whole\",$user,$tools}"
post /v1/chat/completions "{\"model\":\"m\",\"user\":\"openai-whole\",$user,$tools}"
post /v1/chat/completions "{\"model\":\"m\",\"user\":\"vllm-whole\",$user,$tools}"
post /v1/chat/completions "{\"model\":\"m\",\"user\":\"tgi\",$user,\"stream\":true}"
stop "$proxy_PID" || fail "record did not exit 0 on SIGTERM"
check_contains "$WORK/proxy.err" "recorded 14 exchange(s)" "every exchange recorded"

# The recording holds each part apart, decoded cleanly.
"$RETRACE" cat "$WORK/rec.rtrace" >"$WORK/rec.cat" || fail "cat of the recording"
check_contains "$WORK/rec.cat" "choice 0 reasoning (9 tokens" "chat reasoning a part of its own"
check_contains "$WORK/rec.cat" "choice 0 tool call 0 get_weather" "a chat tool call a part of its own"
check_contains "$WORK/rec.cat" "choice 0 embedding" "an embedding"
# The chat answer of tool calls alone (exchange #1) shows its calls, not an empty answer beside them.
awk '/^#1 /{on=1; next} /^#/{on=0} on' "$WORK/rec.cat" >"$WORK/rec1.cat"
check_contains "$WORK/rec1.cat" "choice 0 tool call 0 get_weather" "exchange #1's first call"
if grep -q "choice 0 (0 tokens" "$WORK/rec1.cat"; then cat "$WORK/rec1.cat" >&2; fail "cat shows an empty answer beside the tool calls"; fi
"$RETRACE" export "$WORK/rec.rtrace" >"$WORK/rec.jsonl"
python3 - "$WORK/rec.jsonl" <<'PY' || fail "the recording's parts"
import json, sys
exchanges = [json.loads(line)["exchange"] for line in open(sys.argv[1]) if '"exchange"' in line]
def parts(e):
    return [(c.get("part", "content"), c.get("tool_name", "")) for c in e["choices"]]
by_target = [(e["request"]["target"], e) for e in exchanges]
assert [t for t, _ in by_target] == ["/v1/chat/completions"] * 2 + ["/v1/responses"] * 2 + \
    ["/v1/messages", "/v1/embeddings", "/v1/rerank"] + ["/v1/chat/completions"] * 7, [t for t, _ in by_target]
for e in exchanges[:6] + exchanges[7:]:
    assert e["decode_note"] in ("", None), (e["request"]["target"], e["decode_note"])
    assert e["error"]["kind"] == "none", (e["request"]["body"], e["error"])
assert parts(exchanges[0]) == [("reasoning", ""), ("content", "")], parts(exchanges[0])
assert parts(exchanges[1]) == [("content", ""), ("tool_call", "get_weather"), ("tool_call", "get_time")]
assert parts(exchanges[2]) == parts(exchanges[3]) == [("reasoning", ""), ("content", ""), ("tool_call", "get_weather")]
assert parts(exchanges[4]) == [("reasoning", ""), ("content", "")]
assert parts(exchanges[5]) == [("embedding", "")]
assert exchanges[0]["usage"]["reasoning_tokens"] == 9
assert exchanges[6]["choices"] == []
weather = ("tool_call", "get_current_weather")
assert parts(exchanges[7]) == [("reasoning", ""), ("content", "")], parts(exchanges[7])  # SGLang
assert exchanges[7]["usage"]["reasoning_tokens"] == 11  # at the top of SGLang's usage
assert parts(exchanges[8]) == parts(exchanges[9]) == parts(exchanges[10]) == parts(exchanges[11]) == \
    [("content", ""), weather], [parts(e) for e in exchanges[8:12]]  # SGLang, TGI x2, OpenAI
assert parts(exchanges[12]) == [("reasoning", ""), ("content", ""), ("tool_call", "get_weather"),
                                ("tool_call", "get_time")], parts(exchanges[12])  # vLLM, whole
assert parts(exchanges[13]) == [("content", "")] and exchanges[13]["usage"]["completion_tokens"] == 3  # TGI text
PY

"$RETRACE" stats "$WORK/rec.rtrace" >"$WORK/rec.stats" || fail "stats of the recording"
check_contains "$WORK/rec.stats" "reasoning tokens" "stats counts the reasoning apart"
check_contains "$WORK/rec.stats" "TTFOT" "stats shows the time to the first answer token"

"$RETRACE" replay "$WORK/rec.rtrace" --target "$variant_URL" -c 1 -o "$WORK/run.rtrace" >/dev/null 2>"$WORK/replay.err" \
  || { cat "$WORK/replay.err" >&2; fail "replay against the variant upstream"; }

status=0
"$RETRACE" diff "$WORK/rec.rtrace" "$WORK/run.rtrace" --json >"$WORK/diff.json" || status=$?
check_eq "$status" 1 "diff exits 1: answers differ and one exchange was not compared"
python3 - "$WORK/diff.json" <<'PY' || fail "what diff found"
import json, sys
run = json.load(open(sys.argv[1]))["runs"][0]
assert run["matrix"] == "DD..DDND.D.D..", run["matrix"]
assert run["not_compared"] == 1, run
why = list(run["not_compared_why"])
assert len(why) == 1 and "no output decoded from POST /v1/rerank" in why[0], why
pairs = {p["baseline_id"]: p for p in run["pairs"]}
reasoning = pairs[0]
assert reasoning["parts_changed"] == "reasoning changed, answer the same", reasoning["parts_changed"]
first = reasoning["divergences"][0]
assert first["part"] == "reasoning" and first["baseline_index"] == 3, first
assert first["baseline_token"]["text"] == " asks" and first["candidate_token"]["text"] == " wants", first
tool = pairs[1]
assert tool["parts_changed"] == "tool call 0 (get_weather) changed", tool["parts_changed"]
assert tool["divergences"][0]["baseline_token"]["text"] == "Paris", tool["divergences"][0]
assert pairs[4]["parts_changed"] == "reasoning changed, answer the same", pairs[4]["parts_changed"]
embedding = pairs[5]["divergences"][0]
assert embedding["part"] == "embedding" and abs(embedding["largest_difference"] - 1e-10) < 1e-12, embedding
assert pairs[6]["verdict"] == "not_compared", pairs[6]
assert pairs[7]["parts_changed"] == "reasoning changed, answer the same", pairs[7]["parts_changed"]
assert pairs[7]["divergences"][0]["baseline_token"]["text"] == " asks", pairs[7]["divergences"][0]
for k, old, new in ((9, "oklyn", "onx"), (11, "{\n\"location\": \"Boston, MA\"\n}", "{\n\"location\": \"Austin, TX\"\n}")):
    assert pairs[k]["parts_changed"] == "tool call 0 (get_current_weather) changed", (k, pairs[k]["parts_changed"])
    first = pairs[k]["divergences"][0]
    assert first["baseline_token"]["text"] == old and first["candidate_token"]["text"] == new, (k, first)
PY

"$RETRACE" diff "$WORK/rec.rtrace" "$WORK/run.rtrace" >"$WORK/diff.txt" || true
check_contains "$WORK/diff.txt" "reasoning changed, answer the same" "the terminal report names the part"
check_contains "$WORK/diff.txt" "1 exchanges not compared" "the terminal report counts what it did not compare"
"$RETRACE" diff "$WORK/rec.rtrace" "$WORK/run.rtrace" --embedding-tolerance 1e-6 --json >"$WORK/tolerant.json" || true
python3 -c "import json,sys; m=json.load(open(sys.argv[1]))['runs'][0]['matrix']; assert m == 'DD..D.ND.D.D..', m" \
  "$WORK/tolerant.json" || fail "--embedding-tolerance makes the embedding identical"
# A run against itself: identical but for what cannot be compared, which still fails the exit.
status=0
"$RETRACE" diff "$WORK/rec.rtrace" "$WORK/rec.rtrace" >"$WORK/self.txt" || status=$?
check_eq "$status" 1 "not compared is never counted identical"
check_contains "$WORK/self.txt" "identical 13" "a trace against itself"
echo "ok"
