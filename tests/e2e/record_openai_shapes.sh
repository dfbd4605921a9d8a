# The official openai npm client (tests/npm) through `retrace record` in front of `retrace serve
# --reasoning`: chat with tools (streamed and not), n=2, responses.create streamed and not (with a
# function tool too) and embeddings in the client's default base64 encoding parse the same through
# the proxy as direct, and the recording decodes each of them into its parts.
. "$(dirname "$0")/lib.sh"
CLIENT="$ROOT/tests/e2e/record_openai_shapes_client.mjs"
command -v node >/dev/null || fail "node is required (Node.js 20)"
[[ -f "$ROOT/tests/npm/node_modules/openai/index.mjs" ]] || fail "openai npm client missing: run 'npm ci' in tests/npm"

# No prefix cache: the client asks the same twice (direct, then through the proxy), and a cache
# hit would change the second answer's usage.
start_listening upstream "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off --prefix-cache off --reasoning 3
node "$CLIENT" "$ROOT" "$upstream_URL/v1" >"$WORK/direct.jsonl" || fail "the client direct"
start_listening proxy "$RETRACE" record --upstream "$upstream_URL" --out "$WORK/run.rtrace" --listen 127.0.0.1:0
node "$CLIENT" "$ROOT" "$proxy_URL/v1" >"$WORK/proxied.jsonl" || fail "the client through the proxy"
stop "$proxy_PID" || fail "record did not exit 0 on SIGTERM"

check_eq "$(wc -l <"$WORK/direct.jsonl")" 8 "the direct run printed eight calls"
cmp "$WORK/direct.jsonl" "$WORK/proxied.jsonl" || {
  diff "$WORK/direct.jsonl" "$WORK/proxied.jsonl" | head -20 >&2
  fail "the client parsed different output through the proxy"
}
check_contains "$WORK/proxy.err" "recorded 8 exchange(s)" "every call recorded"

"$RETRACE" export "$WORK/run.rtrace" >"$WORK/run.jsonl"
python3 - "$WORK/run.jsonl" <<'PY' || fail "the recording's parts"
import json, sys
exchanges = [json.loads(line)["exchange"] for line in open(sys.argv[1]) if '"exchange"' in line]
def parts(e):
    # (An answer that is a call keeps its finish reason on a content part without tokens.)
    return [(c.get("part", "content"), c.get("tool_name", "")) for c in e["choices"]
            if c["tokens"] or c.get("part") == "embedding"]
got = [(e["request"]["target"], e["response"]["streamed"], parts(e)) for e in exchanges]
call = ("tool_call", "get_weather")
expected = [
    ("/v1/chat/completions", False, [("reasoning", ""), call]),
    ("/v1/chat/completions", True, [("reasoning", ""), call]),
    ("/v1/chat/completions", False, [("reasoning", ""), ("content", "")] * 2),
    ("/v1/responses", False, [("reasoning", ""), ("content", "")]),
    ("/v1/responses", True, [("reasoning", ""), ("content", "")]),
    ("/v1/responses", False, [("reasoning", ""), call]),
    ("/v1/responses", True, [("reasoning", ""), call]),
    ("/v1/embeddings", False, [("embedding", ""), ("embedding", "")]),
]
assert len(got) == len(expected), got
for g, e in zip(got, expected):
    assert (g[0], g[1]) == (e[0], e[1]), (g, e)
    assert sorted(g[2]) == sorted(e[2]), (g, e)
for e in exchanges:
    assert e["error"]["kind"] == "none" and e["decode_note"] in ("", None), (e["request"]["target"], e["decode_note"])
assert json.loads(exchanges[7]["request"]["body"]).get("encoding_format") == "base64", exchanges[7]["request"]["body"]
vectors = [c for c in exchanges[7]["choices"] if c.get("part") == "embedding"]
assert all(len(c.get("embedding") or c.get("values") or []) > 0 for c in vectors), vectors
PY
echo "ok"
