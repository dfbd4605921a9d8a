#!/usr/bin/env bash
# Reasoning-model answer lengths: 60 streamed answers of 16,384 tokens, 32 at a time, recorded
# through the `record` proxy (the client: 32 Python threads on http.client) and replayed from that
# recording at -c 32 against `retrace serve`: every answer whole in both, and the replay identical
# to the recording.
. "$(dirname "$0")/lib.sh"

start_listening SIM "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off --max-model-len 32768
start_listening PROXY "$RETRACE" record --upstream "$SIM_URL" --listen 127.0.0.1:0 \
  --out "$WORK/recorded.rtrace"
# The client: 32 threads, each streaming chat completions through the proxy and reading every
# event to [DONE]; prints how many answers came back whole.
python3 - "$PROXY_URL" >"$WORK/client.txt" <<'PY'
import http.client, json, queue, sys, threading, urllib.parse
url = urllib.parse.urlparse(sys.argv[1])
work, whole = queue.Queue(), []
for i in range(60):
    work.put({"messages": [{"role": "user", "content": "think step by step about problem %d" % i}],
              "max_tokens": 16384, "ignore_eos": True, "temperature": 0, "stream": True})
def client():
    while True:
        try:
            body = work.get_nowait()
        except queue.Empty:
            return
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=600)
        conn.request("POST", "/v1/chat/completions", json.dumps(body), {"content-type": "application/json"})
        response = conn.getresponse()
        events, done = 0, False
        for line in response:
            if line.startswith(b"data: [DONE]"):
                done = True
            elif line.startswith(b"data: "):
                events += 1
        conn.close()
        if response.status == 200 and done and events > 0:
            whole.append(1)
threads = [threading.Thread(target=client) for _ in range(32)]
for t in threads: t.start()
for t in threads: t.join()
print(len(whole))
PY
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
