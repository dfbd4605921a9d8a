#!/usr/bin/env bash
# Multi-turn sessions at agent sizes: 20 conversations of 10 turns, each turn carrying the ones
# before it (the last bodies ~85 KB), imported from a ShareGPT file made here and replayed with
# --sessions and with --session-mode live at -c 4 against `retrace serve`. The run is planned from
# one pass over the trace and reads each body when its turn comes (replay/planner.hpp). Every turn
# must complete, each after the previous turn of its conversation ended; live turns carry this
# run's own answers. Outcomes are counted, never timed.
. "$(dirname "$0")/lib.sh"

python3 - "$WORK/sharegpt.json" <<'PY'
import json, random, sys
words = ("the of and to a in is it you that he was for on are with as his they be at one have "
         "this from or had by not word but what some we can out other were all there when up use").split()
rng = random.Random(287)
conversations = []
for c in range(20):
    turns = []
    for k in range(10):
        text, n = ["conversation %d question %d:" % (c, k)], 0
        while n < 8300:
            w = rng.choice(words)
            text.append(w)
            n += len(w) + 1
        turns.append({"from": "human", "value": " ".join(text)})
        turns.append({"from": "gpt", "value": "RECORDED-%d-%d the answer" % (c, k)})
    conversations.append({"id": "c%02d" % c, "conversations": turns})
json.dump(conversations, open(sys.argv[1], "w"))
PY
"$RETRACE" import "$WORK/sharegpt.json" --from sharegpt --out "$WORK/sessions.rtrace" 2>"$WORK/import.err"
check_contains "$WORK/import.err" "imported 200 requests" "every turn imported"
ex() { "$RETRACE" export "$1" | jq -c 'select(.exchange) | .exchange'; }
largest=$(ex "$WORK/sessions.rtrace" | jq -r '.request.body | length' | sort -n | tail -1)
(( largest > 80000 && largest < 90000 )) || fail "the largest body is $largest bytes, not ~85 KB"

start_listening SIM "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off --max-model-len 262144

# Every turn completed, in its conversation's order: turn k sent after turn k-1 ended. Imported
# rows are numbered in file order, so within a conversation the source ids give the turn order.
check_order() {
  ex "$1" | jq -r '[.session_id, .source_id, .actual_send_ns, .end_ns, .error.kind] | @tsv' |
    sort -k1,1 -k2,2n >"$WORK/order.tsv"
  check_eq "$(wc -l <"$WORK/order.tsv")" 200 "$2: turns replayed"
  check_eq "$(cut -f1 "$WORK/order.tsv" | uniq -c | awk '$1 == 10' | wc -l)" 20 \
    "$2: conversations replayed, 10 turns each"
  awk -F'\t' '
    $5 != "none" { print "exchange " $2 " of " $1 " failed: " $5; bad = 1 }
    $1 == session && $3 < previous_end { print $1 " exchange " $2 " sent at " $3 " before exchange " id " ended at " previous_end; bad = 1 }
    { session = $1; id = $2; previous_end = $3 + $4 }
    END { exit bad }' "$WORK/order.tsv" || fail "$2: turn order within a conversation"
}

"$RETRACE" replay "$WORK/sessions.rtrace" --target "$SIM_URL" --out "$WORK/ordered.rtrace" -c 4 \
  --sessions --json >"$WORK/ordered.json"
check_eq "$(completed "$WORK/ordered.json")" 200 "--sessions: every turn completed"
check_order "$WORK/ordered.rtrace" "--sessions"

"$RETRACE" replay "$WORK/sessions.rtrace" --target "$SIM_URL" --out "$WORK/live.rtrace" -c 4 \
  --session-mode live --json >"$WORK/live.json"
check_eq "$(completed "$WORK/live.json")" 200 "live: every turn completed"
check_order "$WORK/live.rtrace" "live"
# Live: turn k's assistant messages are this run's answers to turns 0..k-1, none recorded.
ex "$WORK/live.rtrace" >"$WORK/live.jsonl"
python3 - "$WORK/live.jsonl" <<'PY' || fail "live turns carry this run's answers"
import json, sys
rows = []
for line in open(sys.argv[1]):
    e = json.loads(line)
    sent = [m["content"] for m in json.loads(e["request"]["body"])["messages"] if m["role"] == "assistant"]
    answer = "".join(t["bytes"] for t in e["choices"][0]["tokens"])
    rows.append((e["session_id"], e["source_id"], sent, answer))
turns, place = {}, {}
for session, _, sent, answer in sorted(rows):  # a turn's place: its rank by source id
    k = place[session] = place.get(session, -1) + 1
    turns[(session, k)] = (sent, answer)
bad = 0
for (session, k), (sent, _) in sorted(turns.items()):
    want = [turns[(session, j)][1] for j in range(k)]
    if sent != want or any("RECORDED-" in s for s in sent):
        print("%s turn %d sent %r, this run answered %r" % (session, k, sent[:2], want[:2]))
        bad = 1
sys.exit(bad)
PY

stop "$SIM_PID" || fail "serve exited non-zero"
echo ok
