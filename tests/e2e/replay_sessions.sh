#!/usr/bin/env bash
# Sessions: the turns of one session run in recorded order, each after the previous one ended;
# with --session-mode live, a turn's earlier assistant messages are this run's own answers, and a
# tool turn this run's calls (ids mapped in the tool messages) when they are the recorded calls,
# else the recorded turn, counted in the run's header and output.
# The input trace is written with the stock tools (capnp encode + zstd), as DESIGN.md promises
# they can: 3 sessions x 3 turns, interleaved, each turn carrying "RECORDED-s-k" answers.
. "$(dirname "$0")/lib.sh"

start_listening SIM "$RETRACE" serve --listen 127.0.0.1:0

python3 - "$WORK/input.txt" <<'EOF'
import json, sys
records = ['(header = (formatMajor = 1, formatMinor = 0, toolVersion = "test", source = imported, target = "capnp"))']
ident = 0  # turn-major: turn = id / 3, which the checks below rely on
for turn in range(3):
    for session in range(3):
        messages = []
        for k in range(turn + 1):
            messages.append({"role": "user", "content": f"session {session} question {k}: what now?"})
            if k < turn:
                messages.append({"role": "assistant", "content": f"RECORDED-{session}-{k}"})
        body = json.dumps({"model": "retrace-sim", "messages": messages, "max_tokens": 6,
                           "temperature": 0}, ensure_ascii=True)
        records.append('(exchange = (id = %d, sessionId = "s%d", request = (method = "POST", '
                       'target = "/v1/chat/completions", headers = [(name = "content-type", '
                       'value = "application/json")], body = %s), labels = [(key = "turn", value = "%d")]))'
                       % (ident, session, json.dumps(body), turn))
        ident += 1
open(sys.argv[1], "w").write("\n".join(records) + "\n")
EOF
while read -r record; do
  printf '%s\n' "$record" | capnp encode -I/usr/include "$ROOT/format/trace.capnp" Record
done <"$WORK/input.txt" | zstd -q -c >"$WORK/sessions.rtrace"
ex() { "$RETRACE" export "$1" | jq -c 'select(.exchange) | .exchange'; }
check_eq "$(ex "$WORK/sessions.rtrace" | wc -l)" 9 "exchanges in the hand-made trace"

# --- order: every turn is sent after the previous turn of its session ended.
"$RETRACE" replay "$WORK/sessions.rtrace" --target "$SIM_URL" --out "$WORK/ordered.rtrace" -c 3 \
  --sessions >/dev/null
ex "$WORK/ordered.rtrace" | jq -r '[.session_id, (.source_id / 3 | floor), .actual_send_ns, .end_ns, .error.kind] | @tsv' \
  | sort -k1,1 -k2,2n >"$WORK/ordered.tsv"
check_eq "$(wc -l <"$WORK/ordered.tsv")" 9 "exchanges replayed"
awk -F'\t' '
  $5 != "none" { print "turn " $2 " of " $1 " failed: " $5; bad = 1 }
  $1 == session && $3 < previous_end { print $1 " turn " $2 " sent at " $3 " before the previous turn ended at " previous_end; bad = 1 }
  { session = $1; previous_end = $3 + $4 }
  END { exit bad }' "$WORK/ordered.tsv" || fail "session order"

# --- live: turn k carries this run's answers to turns 0..k-1 of its session.
"$RETRACE" replay "$WORK/sessions.rtrace" --target "$SIM_URL" --out "$WORK/live.rtrace" -c 3 \
  --session-mode live >/dev/null
ex "$WORK/live.rtrace" >"$WORK/live.jsonl"
[[ $(grep -c RECORDED- "$WORK/live.jsonl" || true) -eq 0 ]] || fail "a recorded answer was sent in live mode"
for session in s0 s1 s2; do
  for turn in 1 2; do
    sent=$(jq -r --arg s $session --arg t $turn \
      'select(.session_id == $s and (.source_id / 3 | floor) == ($t | tonumber)) | .request.body | fromjson | [.messages[] | select(.role == "assistant") | .content] | join("|")' \
      "$WORK/live.jsonl")
    answered=$(jq -r --arg s $session --arg t $turn \
      'select(.session_id == $s and (.source_id / 3 | floor) < ($t | tonumber)) | [(.source_id / 3 | floor), ([.choices[0].tokens[].bytes] | join(""))] | @tsv' \
      "$WORK/live.jsonl" | sort -n | cut -f2- | paste -sd'|')
    [[ -n "$answered" ]] || fail "$session: no answers before turn $turn"
    check_eq "$sent" "$answered" "$session turn $turn assistant messages"
  done
done
# Live with n = 2: one history, choice 0's, carried on; each such answer's note says so.
"$RETRACE" replay "$WORK/sessions.rtrace" --target "$SIM_URL" --out "$WORK/live-n2.rtrace" -c 3 \
  --session-mode live --set n=2 >/dev/null || fail "live replay with n = 2"
ex "$WORK/live-n2.rtrace" >"$WORK/live-n2.jsonl"
check_eq "$(jq -r 'select([.choices[].index] | max == 1) | .decode_note' "$WORK/live-n2.jsonl" \
  | grep -c 'choice 0 is what the session' || true)" 9 "every answer of two choices says which one a live session carries"
sent=$(jq -r 'select(.session_id == "s0" and (.source_id / 3 | floor) == 1) | .request.body | fromjson | [.messages[] | select(.role == "assistant") | .content] | join("|")' "$WORK/live-n2.jsonl")
first=$(jq -r 'select(.session_id == "s0" and (.source_id / 3 | floor) == 0) | [.choices[] | select(.index == 0) | .tokens[].bytes] | join("")' "$WORK/live-n2.jsonl")
check_eq "$sent" "$first" "the second turn carries choice 0 of the first"
# Recorded mode (the default) sends the recorded answers untouched.
check_eq "$(ex "$WORK/ordered.rtrace" | grep -c 'RECORDED-' || true)" 6 "recorded answers kept without live mode"

# --- live with tool turns. Two agent sessions of three turns (a call, its result answered in
# text, a new question), recorded from serve itself: in "sa" as serve called, so this run calls
# the same again and the turn goes back with this run's call ids; in "sb" the recorded call's
# arguments are another city's, so this run's call is not the recorded one and the turn is kept.
# serve refuses tool messages that do not answer the calls before them (as OpenAI's API does), so
# a mapping gone wrong is an HTTP 400, not a quiet success.
python3 - "$SIM_URL" "$WORK/tools.txt" <<'EOF'
import json, sys, urllib.request
url, out = sys.argv[1], sys.argv[2]
tools = [{"type": "function", "function": {"name": "weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}}]
def answer(messages):
    body = {"model": "retrace-sim", "messages": messages, "tools": tools, "max_tokens": 6, "temperature": 0}
    request = urllib.request.Request(url + "/v1/chat/completions", json.dumps(body).encode(),
                                     {"content-type": "application/json"})
    return json.load(urllib.request.urlopen(request))["choices"][0]["message"]
records = ['(header = (formatMajor = 1, formatMinor = 0, toolVersion = "test", source = imported, target = "capnp"))']
turns = {}
for session, city in (("sa", "Paris"), ("sb", "Lyon")):
    messages = [{"role": "user", "content": f"what is the weather in {city}?"}]
    bodies = [list(messages)]
    call = answer(messages)["tool_calls"][0]
    if session == "sb":  # a recorded call this run will not make
        call = {"id": "call_rec_sb", "type": "function",
                "function": {"name": "weather", "arguments": json.dumps({"city": city})}}
    messages += [{"role": "assistant", "content": None, "tool_calls": [call]},
                 {"role": "tool", "tool_call_id": call["id"], "content": "sunny, 24 C"}]
    bodies.append(list(messages))
    messages += [{"role": "assistant", "content": answer(messages)["content"]},
                 {"role": "user", "content": "and tomorrow?"}]
    bodies.append(list(messages))
    turns[session] = bodies
ident = 0
for turn in range(3):
    for session in ("sa", "sb"):
        body = json.dumps({"model": "retrace-sim", "messages": turns[session][turn], "tools": tools,
                           "max_tokens": 6, "temperature": 0, "stream": session == "sa"})
        records.append('(exchange = (id = %d, sessionId = "%s", request = (method = "POST", '
                       'target = "/v1/chat/completions", headers = [(name = "content-type", '
                       'value = "application/json")], body = %s)))' % (ident, session, json.dumps(body)))
        ident += 1
open(out, "w").write("\n".join(records) + "\n")
EOF
while read -r record; do
  printf '%s\n' "$record" | capnp encode -I/usr/include "$ROOT/format/trace.capnp" Record
done <"$WORK/tools.txt" | zstd -q -c >"$WORK/tools.rtrace"
"$RETRACE" replay "$WORK/tools.rtrace" --target "$SIM_URL" --out "$WORK/tools-live.rtrace" -c 2 \
  --session-mode live >"$WORK/tools-live.out" || { cat "$WORK/tools-live.out" >&2; fail "live replay with tool turns"; }
check_contains "$WORK/tools-live.out" "live tool turns: 1 with this run's calls, 1 kept as recorded" "replay's header line"
"$RETRACE" export "$WORK/tools-live.rtrace" >"$WORK/tools-live.jsonl"
python3 - "$WORK/tools-live.jsonl" <<'EOF' || fail "live tool turns"
import json, sys
lines = [json.loads(line) for line in open(sys.argv[1])]
header = next(line["header"] for line in lines if "header" in line)
turns = json.loads(header["settings"])["live_tool_turns"]
assert (turns["substituted"], turns["kept_as_recorded"]) == (1, 1), turns
sent = {}
for exchange in (line["exchange"] for line in lines if "exchange" in line):
    assert exchange["error"]["kind"] == "none" and exchange["response"]["status"] == 200, exchange["response"]
    sent[(exchange["session_id"], exchange["source_id"] // 2)] = exchange
def calls_made(exchange):  # this run's calls, from the streamed answer
    calls = {}
    for event in exchange["response"]["events"]:
        data = event["data"].removeprefix("data: ").strip()
        if not data.startswith("{"): continue
        for call in (c for choice in json.loads(data)["choices"] for c in choice["delta"].get("tool_calls") or []):
            made = calls.setdefault(call["index"], {"id": None, "arguments": ""})
            made["id"] = call.get("id", made["id"])
            made["arguments"] += call.get("function", {}).get("arguments", "")
    return calls
def messages(session, turn):
    return json.loads(sent[(session, turn)]["request"]["body"])["messages"]
made = calls_made(sent[("sa", 0)])[0]
for turn in (1, 2):  # every later turn of "sa" carries this run's call, its result re-pointed
    tool_turn, result = messages("sa", turn)[1:3]
    assert tool_turn["tool_calls"][0]["id"] == made["id"], (tool_turn, made)
    assert tool_turn["tool_calls"][0]["function"]["arguments"] == made["arguments"]
    assert result == {"role": "tool", "tool_call_id": made["id"], "content": "sunny, 24 C"}, result
text = "".join(t["bytes"] for c in sent[("sa", 1)]["choices"] if c.get("part", "content") == "content" for t in c["tokens"])
assert messages("sa", 2)[3]["content"] == text, (messages("sa", 2)[3], text)
for turn in (1, 2):  # "sb" keeps its recorded call and result
    tool_turn, result = messages("sb", turn)[1:3]
    assert tool_turn["tool_calls"][0]["id"] == "call_rec_sb" and result["tool_call_id"] == "call_rec_sb"
    assert json.loads(tool_turn["tool_calls"][0]["function"]["arguments"]) == {"city": "Lyon"}
EOF
# The mapping is what made "sa" pair: the same turn with the recorded result id is refused.
"$RETRACE" export "$WORK/tools.rtrace" >"$WORK/tools.jsonl"
sa_unmapped=$(python3 -c 'import json, sys
def turn_one(path):  # "sa", turn 1
    exchanges = (json.loads(line).get("exchange") for line in open(path))
    return json.loads(next(e for e in exchanges if e and (e["source_id"] if e["source_id"] is not None else e["id"]) == 2)["request"]["body"])
live, recorded = turn_one(sys.argv[1]), turn_one(sys.argv[2])
assert live["messages"][2]["tool_call_id"] != recorded["messages"][2]["tool_call_id"]
live["messages"][2]["tool_call_id"] = recorded["messages"][2]["tool_call_id"]
print(json.dumps(live))' "$WORK/tools-live.jsonl" "$WORK/tools.jsonl") || fail "the unmapped turn"
check_eq "$(curl -s -o /dev/null -w '%{http_code}' -H 'content-type: application/json' -d "$sa_unmapped" "$SIM_URL/v1/chat/completions")" \
  400 "serve's answer to a tool result that answers no call"

stop "$SIM_PID" || fail "serve exited non-zero"
echo "replay_sessions: ok"
