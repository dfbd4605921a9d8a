# A multi-turn session of the official openai npm client (tests/npm) through retrace shadow, the
# candidate with other weights (--weights-seed 1: its answers differ). The client parses exactly
# what it parses from the primary directly; each turn's history holds the answers the client was
# given (the primary's), and the mirrors are sent that same history, so every turn is compared on
# the same context: the candidate's request bodies equal the primary's, turn by turn, and carry the
# primary's earlier answers, not the candidate's own. Control identical, candidate differing.
. "$(dirname "$0")/lib.sh"
export RETRACE_ROOT="$ROOT"
TURNS=4
SERVE=(serve --listen 127.0.0.1:0 --latency-model off --prefix-cache off)

start_listening primary "$RETRACE" "${SERVE[@]}"
start_listening control "$RETRACE" "${SERVE[@]}"
start_listening candidate "$RETRACE" "${SERVE[@]}" --weights-seed 1

node "$ROOT/tests/e2e/shadow_openai_session.mjs" "$primary_URL/v1" sk-client-key $TURNS >"$WORK/direct.jsonl" ||
  fail "the session against the primary"
start_listening shadow "$RETRACE" shadow --primary "$primary_URL" --control "$control_URL" \
  --candidate "$candidate_URL" --out "$WORK/run" --listen 127.0.0.1:0 --report-every 50ms --max-pairs $TURNS
node "$ROOT/tests/e2e/shadow_openai_session.mjs" "$shadow_URL/v1" sk-client-key $TURNS >"$WORK/through.jsonl" ||
  fail "the session through shadow"
cmp "$WORK/direct.jsonl" "$WORK/through.jsonl" || fail "the openai client parsed a different session through shadow"
check_eq "$(wc -l <"$WORK/through.jsonl")" $TURNS "one line per turn"

status=0
wait "$shadow_PID" || status=$?
check_eq "$status" 0 "--max-pairs ends the run"
S="$WORK/run/summary.json"
check_eq "$(json "$S" 's.legs.candidate.pairs + "/" + s.legs.candidate.differing')" "$TURNS/$TURNS" "every turn compared, each candidate answer differs"
check_eq "$(json "$S" 's.legs.control.pairs + "/" + s.legs.control.identical')" "$TURNS/$TURNS" "every turn compared, the control identical"

# Each turn's mirrored request is the client's, history and all: the same bodies, turn by turn.
bodies() {
  "$RETRACE" export "$WORK/run/$1" >"$WORK/$1.jsonl" || fail "export the $1 leg"
  node -e '
    const lines = require("fs").readFileSync(0, "utf8").trim().split("\n").map(JSON.parse);
    const turns = lines.filter(l => l.exchange).map(l => JSON.parse(l.exchange.request.body));
    turns.sort((a, b) => a.messages.length - b.messages.length);
    console.log(JSON.stringify(turns.map(t => t.messages)));' <"$WORK/$1.jsonl"
}
bodies primary >"$WORK/primary.json"
bodies candidate >"$WORK/candidate.json"
bodies control >"$WORK/control.json"
cmp "$WORK/primary.json" "$WORK/candidate.json" || fail "the candidate was sent another history than the client's"
cmp "$WORK/primary.json" "$WORK/control.json" || fail "the control was sent another history than the client's"
# The last turn's history holds the primary's earlier answers (what the client was given), which
# are not the candidate's: the candidate's own first answer is not in it.
check "the history the candidate got carries the primary's answers, not its own" node -e '
  const fs = require("fs");
  const ex = (leg) => fs.readFileSync(process.argv[1] + "/" + leg + ".jsonl", "utf8").trim().split("\n")
    .map(JSON.parse).filter(l => l.exchange).map(l => l.exchange);
  const first = (leg) => ex(leg).find(e => JSON.parse(e.request.body).messages.length === 2);
  const text = (e) => e.choices.filter(c => (c.part ?? "content") === "content")
    .flatMap(c => c.tokens.map(t => typeof t.bytes === "string" ? t.bytes : "")).join("");
  const last = JSON.parse(fs.readFileSync(process.argv[1] + "/candidate.json", "utf8")).at(-1);
  const given = last.filter(m => m.role === "assistant").map(m => m.content);
  const primaryFirst = text(first("primary")), candidateFirst = text(first("candidate"));
  process.exit(given[0] === primaryFirst && primaryFirst !== candidateFirst && given.length === '"$((TURNS - 1))"' ? 0 : 1)' "$WORK"
echo "ok"
