# A server that fails after its 200 header (issue 29): vLLM's and SGLang's error events, a stream
# whose body ends without [DONE] or a finish reason, and a 200 body holding {"object":"error"}.
# Real upstreams on loopback (the fault upstream sends the bytes of tests/data/ byte for byte;
# `retrace serve --fail-mid-stream` sends vLLM's), through `record` and `replay`: both record them
# as server_error / truncated, `--max-error-rate 0` fails the run, `stats`, `cat` and `report` count
# them as failures.
. "$(dirname "$0")/lib.sh"

start_listening faulty python3 "$ROOT/tests/e2e/record_faults_upstream.py"
start_listening proxy "$RETRACE" record --upstream "$faulty_URL" --out "$WORK/recorded.rtrace" \
  --listen 127.0.0.1:0 --no-server-info --flush-every 1

# The dataset names each request's fault in its prompt (the upstream reads "fault:NAME").
cat >"$WORK/faults.jsonl" <<'EOF'
{"id": "vllm", "prompt": "fault:vllm-error"}
{"id": "sglang", "prompt": "fault:sglang-error"}
{"id": "cut", "prompt": "fault:truncated"}
{"id": "body", "prompt": "fault:error-body-200"}
{"id": "fine", "prompt": "a question the upstream answers"}
EOF
"$RETRACE" import "$WORK/faults.jsonl" --out "$WORK/faults.rtrace" >/dev/null

# Replay through record: the replay client classifies what it read, the proxy what it relayed.
set +e
"$RETRACE" replay "$WORK/faults.rtrace" --target "$proxy_URL" -c 1 --max-error-rate 0 \
  --out "$WORK/run.rtrace" >"$WORK/replay.out" 2>"$WORK/replay.err"
replay_exit=$?
set -e
check_eq "$replay_exit" 1 "replay exits 1 under --max-error-rate 0 when streams failed after their 200"
check_contains "$WORK/replay.err" "4 of 5 requests failed" "replay says how many failed"
stop "$proxy_PID" || fail "record did not stop cleanly"

"$RETRACE" stats "$WORK/run.rtrace" >"$WORK/run.stats"
"$RETRACE" stats "$WORK/recorded.rtrace" >"$WORK/recorded.stats"
for side in run recorded; do
  check_contains "$WORK/$side.stats" "errors" "$side: stats lists errors"
  check_contains "$WORK/$side.stats" "server_error 3" "$side: stats counts vLLM's, SGLang's and the 200 body's errors"
  check_contains "$WORK/$side.stats" "truncated 1" "$side: stats counts the stream cut without [DONE]"
done
grep -E '^ *completed' "$WORK/run.stats" | grep -qE '(^|[^0-9])1($|[^0-9])' ||
  { cat "$WORK/run.stats" >&2; fail "only the one answered request is completed"; }

# cat shows each failure's kind and the server's own words.
"$RETRACE" cat "$WORK/recorded.rtrace" >"$WORK/recorded.cat"
check_contains "$WORK/recorded.cat" "error: server_error: the server reported an error in a 200 response, event 3: CUDA out of memory" "cat shows vLLM's message"
check_contains "$WORK/recorded.cat" "Internal server error: out of memory" "cat shows SGLang's message"
check_contains "$WORK/recorded.cat" "error: truncated: the stream ended after 2 events" "cat shows the truncated stream"
"$RETRACE" cat "$WORK/run.rtrace" --json >"$WORK/run.json"
check_eq "$(jq -r '[.exchanges[] | (.error.kind // "none")] | sort | join(",")' "$WORK/run.json")" \
  "none,server_error,server_error,server_error,truncated" "cat --json: the replay's error kinds"

# The HTML report lists the failures; it never says no request failed.
"$RETRACE" report "$WORK/run.rtrace" --out "$WORK/run.html" >/dev/null
check_contains "$WORK/run.html" "server_error" "report lists server errors"
check_contains "$WORK/run.html" "truncated" "report lists truncated streams"
if grep -q "No request failed" "$WORK/run.html"; then fail "report says no request failed"; fi

# Replaying the recording straight at the upstream classifies alike; a tolerant rate passes.
"$RETRACE" replay "$WORK/recorded.rtrace" --target "$faulty_URL" -c 2 --max-error-rate 0.8 \
  --out "$WORK/again.rtrace" >/dev/null 2>"$WORK/again.err" || { cat "$WORK/again.err" >&2; fail "80 % allowed: exit 0"; }
"$RETRACE" stats "$WORK/again.rtrace" >"$WORK/again.stats"
check_contains "$WORK/again.stats" "server_error 3" "a replay of the recording counts the server errors"
check_contains "$WORK/again.stats" "truncated 1" "a replay of the recording counts the truncated stream"

# retrace serve's fault injection: every second streamed request fails with vLLM's error event.
start_listening sim "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off --fail-mid-stream 0.5 --fail-after-tokens 3
printf '{"prompt": "tell me a story number %d"}\n' 1 2 3 4 5 6 >"$WORK/six.jsonl"
"$RETRACE" import "$WORK/six.jsonl" --out "$WORK/six.rtrace" --max-tokens 12 >/dev/null
set +e
"$RETRACE" replay "$WORK/six.rtrace" --target "$sim_URL" -c 1 --set ignore_eos=true --max-error-rate 0 --out "$WORK/sim.rtrace" \
  >/dev/null 2>"$WORK/sim.err"
sim_exit=$?
set -e
check_eq "$sim_exit" 1 "replay against serve --fail-mid-stream exits 1 under --max-error-rate 0"
check_contains "$WORK/sim.err" "3 of 6 requests failed" "half the streamed requests failed"
"$RETRACE" stats "$WORK/sim.rtrace" >"$WORK/sim.stats"
check_contains "$WORK/sim.stats" "server_error 3" "stats counts serve's injected failures"
"$RETRACE" cat "$WORK/sim.rtrace" --json >"$WORK/sim.json"
python3 - "$WORK/sim.json" <<'PY' || fail "each failed exchange kept its 3 tokens, each good one all 12"
import json, sys
exchanges = json.load(open(sys.argv[1]))["exchanges"]
failed = [x for x in exchanges if x["error"]]
good = [x for x in exchanges if not x["error"]]
assert len(failed) == 3 and len(good) == 3, (len(failed), len(good))
assert all("retrace serve --fail-mid-stream" in x["error"]["message"] for x in failed)
assert all(x["choices"][0]["tokens"] == 3 and x["choices"][0]["finish_reason"] is None for x in failed), failed
assert all(x["choices"][0]["tokens"] == 12 for x in good), good
PY
echo "ok"
