#!/usr/bin/env bash
# Secrets wherever a request body holds them, through the real `retrace record` in front of
# `retrace serve`: 72 planted secrets (25 kinds: secret member names, key- and JWT-shaped values,
# presigned URLs; in a top-level member, chat tool_calls arguments and tool messages, Responses
# function_call arguments and function_call_output, Messages tool_result contents), each sent once
# as application/json and once as curl's default application/x-www-form-urlencoded: none reaches
# the trace, whose bodies stay JSON. An Anthropic thinking block's signature is kept. Then replay
# sends a redacted api_key from the environment with --set-secret (seen through a second record
# that keeps secrets), its own trace keeps the marker, and it says once how many requests went
# out with the marker still in them.
. "$(dirname "$0")/lib.sh"

start_listening sim "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off
start_listening proxy "$RETRACE" record --upstream "$sim_URL" --out "$WORK/rec.rtrace" \
  --listen 127.0.0.1:0 --no-server-info
python3 - "$proxy_URL" "$WORK/planted.txt" <<'PY' || fail "the planting client"
import json, sys, urllib.request, urllib.error
url, planted_file = sys.argv[1], sys.argv[2]
kinds = []
names = ["api_key", "apiKey", "access_token", "refresh_token", "client_secret", "password", "token", "auth",
         "sig", "private_key", "aws_secret_access_key", "id_token", "session_token", "user_jwt", "signature",
         "X-Api-Key"]
# Each kind makes (member, the text that must not reach the trace) from a unique number.
for name in names:
    kinds.append(lambda n, name=name: ({name: f"plant{n:03d}zz"}, f"plant{n:03d}zz"))
shapes = ["sk-proj-abcdefghijklmnopqrstu", "AKIAABCDEFGHIJKLMNOP", "ghp_abcdefghijklmnopqrstuvwxyz0123",
          "hf_abcdefghijklmnopqrstuvwxyz0123", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln"]
for shape in shapes:  # digits only after the shape: every alphabet above takes them
    kinds.append(lambda n, shape=shape: ({"value": f"{shape}{n:03d}"}, f"{shape}{n:03d}"))
for parameter in ["X-Amz-Signature", "sig", "token", "key"]:
    kinds.append(lambda n, p=parameter: ({"url": f"see https://bucket.example/o.png?X-Amz-Date=1&{p}=plant{n:03d}zz now"},
                                         f"plant{n:03d}zz"))
def places(member):
    inner = json.dumps(member)
    return [
        ("/v1/chat/completions", {"model": "m", "max_tokens": 2, "messages": [{"role": "user", "content": "hi"}], **member}),
        ("/v1/chat/completions", {"model": "m", "max_tokens": 2, "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": inner}}]},
            {"role": "tool", "tool_call_id": "c", "content": inner}]}),
        ("/v1/responses", {"model": "m", "max_output_tokens": 2, "input": [
            {"role": "user", "content": "hi"},
            {"type": "function_call", "call_id": "c", "name": "f", "arguments": inner},
            {"type": "function_call_output", "call_id": "c", "output": inner}]}),
        ("/v1/messages", {"model": "m", "max_tokens": 2, "messages": [
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "t", "signature": "ErUBkeepme=="},
                                              {"type": "tool_use", "id": "t", "name": "f", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": inner}]}]}),
    ]
planted = []
sent = 0
# 72 secrets: the i-th of kind i mod 25 in place i mod 4 (every kind, every place, 72 pairs).
for i in range(72):
    member, secret = kinds[i % len(kinds)](i)
    path, body = places(member)[i % 4]
    planted.append(secret)
    for content_type in ("application/json", "application/x-www-form-urlencoded"):
        request = urllib.request.Request(url + path, data=json.dumps(body).encode(), method="POST",
                                         headers={"Content-Type": content_type})
        try:
            urllib.request.urlopen(request, timeout=30).read()
        except urllib.error.HTTPError as e:
            e.read()
        sent += 1
assert len(kinds) == 25, len(kinds)
assert len(planted) == 72 and sent == 144, (len(planted), sent)
open(planted_file, "w").write("\n".join(planted) + "\n")
PY
stop "$proxy_PID" || fail "record did not exit 0 on SIGTERM"
"$RETRACE" export "$WORK/rec.rtrace" >"$WORK/rec.jsonl"
python3 - "$WORK/rec.jsonl" "$WORK/planted.txt" <<'PY' || fail "secrets reached the trace"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])][1:]
planted = open(sys.argv[2]).read().split()
assert len(lines) == 144, len(lines)
text = open(sys.argv[1]).read()
leaked = [s for s in planted if s in text]
assert not leaked, f"{len(leaked)} of 72 planted secrets reached the trace: {leaked[:5]}"
for line in lines:
    body = line["exchange"]["request"]["body"]
    json.loads(body)  # still JSON, under either content type
    assert "[redacted]" in body, body[:300]
assert "ErUBkeepme==" in text, "the thinking block's signature was redacted"
PY

# --set-secret: the recorded api_key goes out with the environment's value, through a second
# record that keeps secrets (what replay sent), while replay's own trace keeps the marker.
start_listening keep "$RETRACE" record --upstream "$sim_URL" --out "$WORK/sent.rtrace" \
  --listen 127.0.0.1:0 --no-server-info --keep-secrets
REAL_KEY="real-key-$RANDOM$RANDOM" "$RETRACE" replay "$WORK/rec.rtrace" --target "$keep_URL" -c 4 \
  --filter 'path:/v1/chat/completions' --set-secret api_key=REAL_KEY --max-error-rate 1 --no-stream \
  --out "$WORK/rep.rtrace" >/dev/null 2>"$WORK/replay.err" || { cat "$WORK/replay.err" >&2; fail "replay --set-secret"; }
stop "$keep_PID" || fail "the keeping record did not exit 0"
"$RETRACE" export "$WORK/sent.rtrace" >"$WORK/sent.jsonl"
"$RETRACE" export "$WORK/rep.rtrace" >"$WORK/rep.jsonl"
grep -c '\\"api_key\\":\\"real-key-' "$WORK/sent.jsonl" >"$WORK/filled" || true
check_eq "$(cat "$WORK/filled")" 2 "the api_key of both chat requests that carried one was sent from the environment"
grep -q 'real-key-' "$WORK/rep.jsonl" && fail "the environment's secret reached replay's own trace"
check_eq "$(grep -c '\\"api_key\\":\\"\[redacted\]' "$WORK/rep.jsonl")" 2 "replay's trace keeps the marker"
# The other chat requests still carried markers: said once.
check_eq "$(grep -c 'were sent with "\[redacted\]"' "$WORK/replay.err")" 1 "the marker note, once"
check_contains "$WORK/replay.err" "pass --set-secret FIELD=ENV" "the note names the flag"
# Unset, the variable is an error before any traffic.
status=0
"$RETRACE" replay "$WORK/rec.rtrace" --target "$sim_URL" -c 1 --set-secret api_key=RETRACE_UNSET_VAR \
  --out "$WORK/none.rtrace" >/dev/null 2>"$WORK/unset.err" || status=$?
check_eq "$status" 2 "exit status with an unset --set-secret variable"
check_contains "$WORK/unset.err" "--set-secret api_key=RETRACE_UNSET_VAR: the environment variable RETRACE_UNSET_VAR is not set" \
  "the error names the variable"
echo "ok"
