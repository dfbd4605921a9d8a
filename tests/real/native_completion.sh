#!/usr/bin/env bash
# llama.cpp's native /completion through `retrace record`: a stream that ends without
# "data: [DONE]", token ids from "tokens", logprobs from "completion_probabilities" (n_probs);
# the client gets the server's bytes, and a replay at concurrency 1 diffs identical.
. "$(dirname "$0")/lib.sh"

start_llama LLAMA
start_listening proxy "$RETRACE" record --upstream "$LLAMA_URL" --out "$WORK/run.rtrace" --listen 127.0.0.1:0
stream='{"prompt":"The quick brown fox","n_predict":48,"temperature":0,"stream":true,"return_tokens":true,"n_probs":2}'
plain='{"prompt":"Tell me a story about a lighthouse","n_predict":24,"temperature":0,"return_tokens":true,"n_probs":2}'
for body in "$stream" "$plain"; do
  curl -sSf -N -H 'Content-Type: application/json' -d "$body" "$proxy_URL/completion" >>"$WORK/client.out" \
    || fail "POST /completion through the proxy: $body"
done
stop "$proxy_PID" || fail "record did not exit 0 on SIGTERM"
check_contains "$WORK/proxy.err" "recorded 2 exchange(s)" "summary at exit"
check_contains "$WORK/client.out" '"stop":true' "the client got the stream's last event"
if grep -qF '[DONE]' "$WORK/client.out"; then fail "llama.cpp's native stream has no [DONE]; the proxy added one"; fi

"$RETRACE" export "$WORK/run.rtrace" >"$WORK/run.jsonl"
python3 - "$WORK/run.jsonl" <<'PY' || fail "trace contents"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
exchanges = [l["exchange"] for l in lines[1:]]
assert [e["request"]["target"] for e in exchanges] == ["/completion"] * 2
assert [e["response"]["streamed"] for e in exchanges] == [True, False]
events = exchanges[0]["response"]["events"]
assert events and "[DONE]" not in "".join(ev["data"] for ev in events), "stream events"
assert '"stop":true' in events[-1]["data"], events[-1]["data"][:200]
for e, wanted in zip(exchanges, (48, 24)):
    where = f'exchange {e["id"]} (streamed={e["response"]["streamed"]})'
    assert e["error"]["kind"] == "none", (where, e["error"])
    assert len(e["choices"]) == 1, (where, len(e["choices"]))
    choice = e["choices"][0]
    tokens = choice["tokens"]
    assert choice["kind"] == "token_ids", f'{where}: tokens are {choice["kind"]}, not token ids'
    assert len(tokens) == wanted, f"{where}: {len(tokens)} tokens, n_predict was {wanted}"
    assert all(t["id"] >= 0 for t in tokens), f"{where}: a token without id"
    assert all(t["logprob"] is not None and t["logprob"] <= 0 for t in tokens), f"{where}: a token without logprob"
    assert all(len(t["top"]) == 2 for t in tokens), f"{where}: a token without its 2 top logprobs"
PY

check_replay_identical "$WORK/run.rtrace" "$LLAMA_URL"
echo "PASS real.native_completion"
