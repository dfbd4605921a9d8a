#!/usr/bin/env bash
# A kept-alive connection that the server closes when the next request arrives, before any byte of
# the response — what llama.cpp's server does after every streamed response, and any server whose
# idle timeout races a new request. record (towards its upstream) and replay send the request once
# more on a fresh connection, say so on the exchange (`retries`), and lose nothing.
. "$(dirname "$0")/lib.sh"

start_listening faulty python3 "$ROOT/tests/e2e/record_faults_upstream.py"
start_listening proxy "$RETRACE" record --upstream "$faulty_URL" --out "$WORK/rec.rtrace" \
  --listen 127.0.0.1:0 --no-server-info --flush-every 1
body='{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}'
# One curl, one client connection: one proxy worker and its one upstream pool, in order.
args=()
for i in 1 2 3 4 5 6; do
  (( i > 1 )) && args+=(--next)
  args+=(-o "$WORK/out$i" -w '%{http_code}\n' -H 'content-type: application/json' -d "$body"
         "$proxy_URL/v1/chat/completions?fault=drop-next&n=$i")
done
curl -sS --max-time 20 "${args[@]}" >"$WORK/codes" || fail "curl through record failed"
check_eq "$(tr '\n' ' ' <"$WORK/codes")" "200 200 200 200 200 200 " "every client got its response"
for i in 1 2 3 4 5 6; do check_contains "$WORK/out$i" "data: [DONE]" "response $i complete"; done
stop "$proxy_PID"
check_contains "$WORK/faulty.err" "dropped POST" "the upstream dropped requests on kept-alive connections"

"$RETRACE" export "$WORK/rec.rtrace" | jq -c 'select(.exchange) | .exchange' >"$WORK/rec.jsonl"
check_eq "$(jq -s -c 'map(.retries)' "$WORK/rec.jsonl")" "[0,1,1,1,1,1]" \
  "record: the first request went out on a fresh connection, every later one once more on a new one"
check_eq "$(jq -s -c 'map(.error.kind)|unique' "$WORK/rec.jsonl")" '["none"]' "record: no exchange failed"
check_eq "$(jq -s -c 'map(.choices[0].tokens|map(.bytes)|join(""))|unique' "$WORK/rec.jsonl")" '["Hello"]' \
  "record: every stream decoded whole"

# replay, five requests at a time on one thread (one pool) for six exchanges: the first slot to
# finish sends the sixth on its kept-alive connection while the other four put theirs back in the
# pool. The server drops the sixth; its retry must not take one of those four, which the server
# would drop as well, but a fresh connection.
"$RETRACE" replay "$WORK/rec.rtrace" --target "$faulty_URL" -c 5 --threads 1 \
  --out "$WORK/rep.rtrace" >"$WORK/replay.out" 2>"$WORK/replay.err" || { cat "$WORK/replay.err" >&2; fail "replay exit status"; }
"$RETRACE" export "$WORK/rep.rtrace" | jq -c 'select(.exchange) | .exchange' >"$WORK/rep.jsonl"
check_eq "$(jq -s -c 'map(.error.kind)|unique' "$WORK/rep.jsonl")" '["none"]' "replay: no exchange failed"
check_eq "$(jq -s -c 'map(.retries)|add' "$WORK/rep.jsonl")" 1 "replay: the one request on a reused connection was retried"
"$RETRACE" stats "$WORK/rep.rtrace" >"$WORK/stats.out"
check_contains "$WORK/stats.out" "retried             1" "stats counts the retried exchange"
echo "ok"
