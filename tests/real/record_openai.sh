#!/usr/bin/env bash
# The official openai npm client through `retrace record` against llama-server: chat and
# completions, streamed and not. The client parses the same output through the proxy as in a
# direct call; every recorded exchange has token ids, and logprobs where they were asked for; a
# replay of the recording at concurrency 1 diffs identical to it.
. "$(dirname "$0")/lib.sh"
CLIENT="$ROOT/tests/real/openai_client.mjs"

start_llama LLAMA
node "$CLIENT" "$LLAMA_URL/v1" >"$WORK/direct.jsonl" || fail "the openai client against llama-server directly"

start_listening proxy "$RETRACE" record --upstream "$LLAMA_URL" --out "$WORK/run.rtrace" --listen 127.0.0.1:0
node "$CLIENT" "$proxy_URL/v1" >"$WORK/proxied.jsonl" || fail "the openai client through retrace record"
stop "$proxy_PID" || fail "record did not exit 0 on SIGTERM"

check "the direct run printed four calls" test "$(wc -l <"$WORK/direct.jsonl")" -eq 4
cmp "$WORK/direct.jsonl" "$WORK/proxied.jsonl" || {
  diff "$WORK/direct.jsonl" "$WORK/proxied.jsonl" | head -c 3000 >&2
  fail "the client parsed different output through the proxy"
}
check_contains "$WORK/proxy.err" "recorded 4 exchange(s)" "summary at exit"

"$RETRACE" export "$WORK/run.rtrace" >"$WORK/run.jsonl"
python3 - "$WORK/run.jsonl" <<'PY' || fail "trace contents"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
exchanges = [l["exchange"] for l in lines[1:]]
targets = [e["request"]["target"] for e in exchanges]
assert targets == ["/v1/chat/completions"] * 2 + ["/v1/completions"] * 2, targets
for e in exchanges:
    where = f'exchange {e["id"]} ({e["request"]["target"]}, streamed={e["response"]["streamed"]})'
    assert e["response"]["status"] == 200, (where, e["response"]["status"])
    assert e["error"]["kind"] == "none", (where, e["error"])
    for choice in e["choices"]:
        tokens = choice["tokens"]
        assert len(tokens) > 0, f"{where}: no tokens decoded"
        assert choice["kind"] == "token_ids", f'{where}: tokens are {choice["kind"]}, not token ids'
        assert all(t["id"] >= 0 for t in tokens), f"{where}: a token without id: {tokens}"
        assert all(t["logprob"] is not None and t["logprob"] <= 0 for t in tokens), f"{where}: a token without logprob"
        assert all(len(t["top"]) == 2 for t in tokens), f"{where}: a token without its 2 top logprobs"
assert [e["response"]["streamed"] for e in exchanges] == [True, False, True, False]
PY

# Replayed at concurrency 1, the recording's outputs come back token for token.
check_replay_identical "$WORK/run.rtrace" "$LLAMA_URL"
echo "PASS real.record_openai"
