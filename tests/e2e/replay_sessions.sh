#!/usr/bin/env bash
# Sessions: the turns of one session run in recorded order, each after the previous one ended;
# with --session-mode live, a turn's earlier assistant messages are this run's own answers.
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
# Recorded mode (the default) sends the recorded answers untouched.
check_eq "$(ex "$WORK/ordered.rtrace" | grep -c 'RECORDED-' || true)" 6 "recorded answers kept without live mode"

stop "$SIM_PID" || fail "serve exited non-zero"
echo "replay_sessions: ok"
