# `retrace import --endpoint responses|messages|embeddings`: a dataset's "prompt" and "messages"
# lines (and whole bodies) become Responses API, Messages API and embeddings request bodies, each
# with its own output limit (max_output_tokens; max_tokens, which the Messages API requires; none
# for embeddings) and system messages as the Messages API's "system". Replayed against retrace
# serve, every request is answered 200 and decoded; a line an endpoint cannot take is refused with
# its line number.
. "$(dirname "$0")/lib.sh"

cat >"$WORK/rows.jsonl" <<'ROWS'
{"prompt": "Why is the sky blue?", "id": "p1"}
{"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Why is the sea salty?"}], "max_tokens": 7}
ROWS
printf '{"request": {"input": "Whole body", "max_output_tokens": 5, "temperature": 0.5}}\n' >"$WORK/responses-body.jsonl"
printf '{"prompt": "embed me"}\n{"prompt": "and me"}\n' >"$WORK/embed.jsonl"

for endpoint in responses messages; do
  "$RETRACE" import "$WORK/rows.jsonl" --endpoint "$endpoint" --max-tokens 9 --out "$WORK/$endpoint.rtrace" \
    >/dev/null 2>"$WORK/$endpoint.err" || { cat "$WORK/$endpoint.err" >&2; fail "import --endpoint $endpoint"; }
  "$RETRACE" export "$WORK/$endpoint.rtrace" >"$WORK/$endpoint.jsonl"
done
"$RETRACE" import "$WORK/responses-body.jsonl" --endpoint responses --out "$WORK/body.rtrace" >/dev/null \
  || fail "import of a whole Responses body"
"$RETRACE" export "$WORK/body.rtrace" >"$WORK/body.jsonl"
"$RETRACE" import "$WORK/embed.jsonl" --endpoint embeddings --out "$WORK/embed.rtrace" >/dev/null \
  || fail "import --endpoint embeddings"
"$RETRACE" export "$WORK/embed.rtrace" >"$WORK/embed.jsonl"
# OpenAI's reasoning models refuse a temperature: none is added for them, a line's own is kept.
printf '%s\n' '{"prompt": "a", "model": "o3-mini"}' '{"prompt": "b", "model": "openai/o1"}' \
  '{"prompt": "c", "model": "gpt-5"}' '{"prompt": "d", "model": "o4-mini", "temperature": 1}' \
  '{"prompt": "e", "model": "gpt-4o"}' >"$WORK/oseries.jsonl"
"$RETRACE" import "$WORK/oseries.jsonl" --out "$WORK/oseries.rtrace" >/dev/null || fail "import of o-series lines"
"$RETRACE" export "$WORK/oseries.rtrace" >"$WORK/oseries.jsonl.out"
python3 - "$WORK/oseries.jsonl.out" <<'PY' || fail "o-series bodies get no temperature"
import json, sys
bodies = [json.loads(json.loads(l)["exchange"]["request"]["body"]) for l in list(open(sys.argv[1]))[1:]]
assert [b.get("temperature") for b in bodies] == [None, None, None, 1, 0], bodies
PY

python3 - "$WORK" <<'PY' || fail "the imported bodies"
import json, sys
work = sys.argv[1]
def requests(name):
    lines = [json.loads(l) for l in open(f"{work}/{name}.jsonl")]
    return [(l["exchange"]["request"]["target"], json.loads(l["exchange"]["request"]["body"])) for l in lines[1:]]
(t1, b1), (t2, b2) = requests("responses")
assert t1 == t2 == "/v1/responses", (t1, t2)
assert b1 == {"input": "Why is the sky blue?", "temperature": 0, "max_output_tokens": 9}, b1
assert b2["input"] == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Why is the sea salty?"}], b2
assert b2["max_output_tokens"] == 7 and "max_tokens" not in b2, b2
(t1, b1), (t2, b2) = requests("messages")
assert t1 == t2 == "/v1/messages", (t1, t2)
assert b1 == {"messages": [{"role": "user", "content": "Why is the sky blue?"}], "temperature": 0, "max_tokens": 9}, b1
assert b2["system"] == "Be brief." and b2["messages"] == [{"role": "user", "content": "Why is the sea salty?"}], b2
assert b2["max_tokens"] == 7, b2
[(t, b)] = requests("body")
assert t == "/v1/responses" and b == {"input": "Whole body", "max_output_tokens": 5, "temperature": 0.5}, (t, b)
embeds = requests("embed")
assert [t for t, _ in embeds] == ["/v1/embeddings"] * 2, embeds
assert embeds[0][1] == {"input": "embed me"}, embeds[0][1]
PY

start_listening sim "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off
for name in responses messages embed; do
  "$RETRACE" replay "$WORK/$name.rtrace" --target "$sim_URL" -c 1 -o "$WORK/$name-run.rtrace" >/dev/null \
    2>"$WORK/$name-run.err" || { cat "$WORK/$name-run.err" >&2; fail "replay of the $name import"; }
  "$RETRACE" export "$WORK/$name-run.rtrace" >"$WORK/$name-run.jsonl"
done
python3 - "$WORK" <<'PY' || fail "the server took every imported body"
import json, sys
work = sys.argv[1]
for name, part, limit in (("responses", "content", [9, 7]), ("messages", "content", [9, 7]), ("embed", "embedding", None)):
    exchanges = [json.loads(l)["exchange"] for l in open(f"{work}/{name}-run.jsonl") if '"exchange"' in l]
    assert len(exchanges) == 2, (name, len(exchanges))
    for e in exchanges:
        assert e["response"]["status"] == 200 and e["error"]["kind"] == "none", (name, e["response"]["status"], e["error"])
        assert [c.get("part", "content") for c in e["choices"]] == [part], (name, e["choices"])
    if limit:
        used = [e["usage"]["completion_tokens"] for e in exchanges]
        assert all(u <= l for u, l in zip(used, limit)), (name, used)
PY

# What an endpoint cannot take is refused with the line named, and nothing is written.
status=0
"$RETRACE" import "$WORK/rows.jsonl" --endpoint embeddings --out "$WORK/bad.rtrace" 2>"$WORK/bad.err" >/dev/null || status=$?
check "a messages line for embeddings is refused" test "$status" -ne 0
check_contains "$WORK/bad.err" "rows.jsonl:2: \"messages\" cannot be embedded" "the refusal names the line"
check "nothing written" test ! -e "$WORK/bad.rtrace"
echo "ok"
