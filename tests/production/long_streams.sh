#!/usr/bin/env bash
# Reasoning-model answer lengths: 60 streamed answers of 16,384 tokens, 32 at a time, recorded
# through the `record` proxy (the client: 32 Python threads on http.client) and replayed from that
# recording at -c 32 against `retrace serve`: every answer whole in both, and the replay identical
# to the recording.
. "$(dirname "$0")/lib.sh"

start_listening SIM "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off --max-model-len 32768
start_listening PROXY "$RETRACE" record --upstream "$SIM_URL" --listen 127.0.0.1:0 \
  --out "$WORK/recorded.rtrace"
# The client: 32 threads streaming chat completions through the proxy, every event read to
# [DONE] (client.py).
for i in $(seq 0 59); do
  printf '{"request": {"messages": [{"role": "user", "content": "think step by step about problem %d"}], "max_tokens": 16384, "ignore_eos": true, "temperature": 0, "stream": true}}\n' "$i"
done >"$WORK/requests.jsonl"
python3 "$(dirname "$0")/client.py" "$PROXY_URL" "$WORK/requests.jsonl" 32 >"$WORK/client.txt"
check_eq "$(cat "$WORK/client.txt")" 60 "every stream came back whole through the proxy"
stop "$PROXY_PID" || fail "the proxy did not stop cleanly"

tokens() { "$RETRACE" export "$1" | jq -r 'select(.exchange) | .exchange | (.choices[0].tokens | length)' |
  sort | uniq -c | awk '{print $2 "x" $1}' | paste -sd, -; }
check_eq "$(tokens "$WORK/recorded.rtrace")" "16384x60" "the recording holds every token of every answer"
"$RETRACE" replay "$WORK/recorded.rtrace" --target "$SIM_URL" --out "$WORK/replayed.rtrace" -c 32 \
  --json >"$WORK/replayed.json"
check_eq "$(completed "$WORK/replayed.json")" 60 "every stream of the replay completed"
check_eq "$(tokens "$WORK/replayed.rtrace")" "16384x60" "the replay holds every token of every answer"
status=0
"$RETRACE" diff "$WORK/recorded.rtrace" "$WORK/replayed.rtrace" >"$WORK/diff.txt" || status=$?
check_eq "$status" 0 "diff exit status: the replay is the recording"
check_contains "$WORK/diff.txt" "0 of 60 differ" "diff of recording and replay"
echo ok
