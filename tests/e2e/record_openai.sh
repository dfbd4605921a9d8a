# retrace record between the official openai npm client and retrace serve: the client parses the
# same output as in a direct call, the trace holds every exchange with chunk timing and token ids,
# and secrets are redacted (or kept with --keep-secrets).
. "$(dirname "$0")/lib.sh"
export RETRACE_ROOT="$ROOT"
CLIENT="$ROOT/tests/e2e/record_openai_client.mjs"
SECRET_KEY="sk-record-test-$RANDOM$RANDOM"
SECRET_COOKIE="session=cookie-record-test-$RANDOM$RANDOM"

# No prefix cache: the client asks the same twice (direct, then through the proxy), and a cache
# hit would change the second answer's usage.
start_listening upstream "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off --prefix-cache off
node "$CLIENT" "$upstream_URL/v1" "$SECRET_KEY" "$SECRET_COOKIE" conv-1 >"$WORK/direct.jsonl"

start_listening proxy "$RETRACE" record --upstream "$upstream_URL" --out "$WORK/run.rtrace" \
  --listen 127.0.0.1:0 --session-header X-Conversation
node "$CLIENT" "$proxy_URL/v1" "$SECRET_KEY" "$SECRET_COOKIE" conv-1 >"$WORK/proxied.jsonl"
stop "$proxy_PID" || fail "record did not exit 0 on SIGTERM"

check "the direct run printed three calls" test "$(wc -l <"$WORK/direct.jsonl")" -eq 3
cmp "$WORK/direct.jsonl" "$WORK/proxied.jsonl" || {
  diff "$WORK/direct.jsonl" "$WORK/proxied.jsonl" | head -20 >&2
  fail "the client parsed different output through the proxy"
}
check_contains "$WORK/proxy.err" "recorded 3 exchange(s)" "summary at exit"

"$RETRACE" export "$WORK/run.rtrace" >"$WORK/run.jsonl"
python3 - "$WORK/run.jsonl" "$upstream_URL" <<'EOF' || fail "trace contents"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
header = lines[0]["header"]
assert header["source"] == "recorded", header
assert header["target"].startswith(sys.argv[2]), header["target"]
assert json.loads(header["settings"])["command"] == "record"
assert "models" in json.loads(header["server_info"]), header["server_info"]
exchanges = [l["exchange"] for l in lines[1:]]
assert len(exchanges) == 3, len(exchanges)
assert [e["id"] for e in exchanges] == [0, 1, 2]
targets = [e["request"]["target"] for e in exchanges]
assert targets == ["/v1/chat/completions", "/v1/completions", "/v1/chat/completions"], targets
for e in exchanges:
    assert e["response"]["status"] == 200, e["response"]["status"]
    assert e["error"]["kind"] == "none", e["error"]
    assert e["session_id"] == "conv-1", e["session_id"]
    assert e["first_byte_ns"] > 0 and e["end_ns"] >= e["first_byte_ns"], (e["first_byte_ns"], e["end_ns"])
    choices = e["choices"]
    assert choices and all(c["tokens"] for c in choices), "no tokens decoded"
for e in exchanges[:2]:
    response = e["response"]
    assert response["streamed"], "streamed response not marked streamed"
    events = response["events"]
    assert len(events) > 3, len(events)
    offsets = [ev["offset_ns"] for ev in events]
    assert offsets == sorted(offsets) and offsets[0] > 0, offsets
    body = "".join(ev["data"] for ev in events)
    assert body.endswith("data: [DONE]\n\n"), body[-40:]
    for choice in e["choices"]:
        assert choice["kind"] == "token_ids", choice["kind"]
        assert all(t["id"] >= 0 for t in choice["tokens"]), "token without id"
        assert all(t["offset_ns"] > 0 for t in choice["tokens"])
assert not exchanges[2]["response"]["streamed"]
assert exchanges[2]["response"]["body"].startswith("{")
EOF

# Redaction: the secrets never reach the file; with --keep-secrets they do.
zstd -dc "$WORK/run.rtrace" >"$WORK/run.raw" 2>/dev/null || true
if grep -qF "$SECRET_KEY" "$WORK/run.raw"; then fail "the API key reached the trace"; fi
if grep -qF "$SECRET_COOKIE" "$WORK/run.raw"; then fail "the cookie reached the trace"; fi
check "the redaction marker is in the trace" grep -qF "[redacted]" "$WORK/run.raw"

start_listening kept "$RETRACE" record --upstream "$upstream_URL" --out "$WORK/kept.rtrace" \
  --listen 127.0.0.1:0 --keep-secrets --no-server-info
node "$CLIENT" "$kept_URL/v1" "$SECRET_KEY" "$SECRET_COOKIE" conv-2 >/dev/null
stop "$kept_PID" || fail "record --keep-secrets did not exit 0"
check_contains "$WORK/kept.err" "--keep-secrets" "a warning about --keep-secrets"
zstd -dc "$WORK/kept.rtrace" >"$WORK/kept.raw" 2>/dev/null || true
check "--keep-secrets keeps the API key" grep -qF "$SECRET_KEY" "$WORK/kept.raw"
check "--keep-secrets keeps the cookie" grep -qF "$SECRET_COOKIE" "$WORK/kept.raw"
echo "PASS record_openai"
