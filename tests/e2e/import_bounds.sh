#!/usr/bin/env bash
# What the CLI says about input past import's bounds and a filter it cannot read (#34.10): send
# offsets before the start or more than 100 years on, rows out of time order, JSON nested past 32
# levels, ShareGPT conversations past --max-turns, an unclosed '[' in --filter, and a prompt that
# opens like a spreadsheet formula in CSV output. Each refusal exits 2, names the line and leaves no
# trace.
. "$(dirname "$0")/lib.sh"

refused() {  # refused WHAT TEXT IN [ARGS...]: import exits 2 with TEXT on stderr and writes nothing
  local what=$1 text=$2 in=$3; shift 3
  local status=0
  "$RETRACE" import "$in" --out "$WORK/refused.rtrace" "$@" 2>"$WORK/refused.err" || status=$?
  check_eq "$status" 2 "exit status of import with $what"
  check_contains "$WORK/refused.err" "$text" "$what"
  [[ ! -e "$WORK/refused.rtrace" ]] || fail "import with $what wrote a trace"
}

"$RETRACE" import "$ROOT/traces/gold-intents.jsonl" --out "$WORK/gold.rtrace" 2>/dev/null
"$RETRACE" export "$WORK/gold.rtrace" >"$WORK/export.jsonl"
for value in -1 9000000000000000000; do
  python3 - "$WORK/export.jsonl" "$WORK/offset$value.jsonl" "$value" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
row = json.loads(lines[3])
row["exchange"]["intended_send_ns"] = int(sys.argv[3])
lines[3] = json.dumps(row)
open(sys.argv[2], "w").write("\n".join(lines) + "\n")
PY
done
refused "a send offset before the start" ":4: \"intended_send_ns\" -1 is before the run's start" "$WORK/offset-1.jsonl"
refused "a send offset 285 years on" ":4: \"intended_send_ns\" 9000000000000000000 is more than 100 years after" \
  "$WORK/offset9000000000000000000.jsonl"

printf '{"timestamp": 0, "input_length": 5, "output_length": 1}\n{"timestamp": 5000000000000, "input_length": 5, "output_length": 1}\n' \
  >"$WORK/late.jsonl"
refused "a row 158 years after the first" "late.jsonl:2: the row's time is more than 100 years after the first row's" "$WORK/late.jsonl"

printf 'Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n1,m,5,2,7,c\n9,m,5,2,7,c\n4,m,5,2,7,c\n' \
  >"$WORK/unsorted.csv"
"$RETRACE" import "$WORK/unsorted.csv" --out "$WORK/unsorted.rtrace" 2>"$WORK/unsorted.err"
check_contains "$WORK/unsorted.err" "warning: 1 row is earlier than the row before it (the first at $WORK/unsorted.csv:4)" \
  "rows out of time order are named"

python3 -c 'print("{\"prompt\": \"hi\", \"x\": " + "[" * 40 + "]" * 40 + "}")' >"$WORK/deep.jsonl"
refused "JSON nested 40 levels" "deep.jsonl:1: the JSON nests objects and arrays more than 32 levels deep" "$WORK/deep.jsonl"

python3 -c '
import json
turns = [t for k in range(5) for t in ({"from": "human", "value": "q%d" % k}, {"from": "gpt", "value": "a"})]
print(json.dumps([{"id": "c", "conversations": turns}]))' >"$WORK/long.json"
"$RETRACE" import "$WORK/long.json" --out "$WORK/long.rtrace" --max-turns 2 2>"$WORK/long.err"
check_contains "$WORK/long.err" "imported 2 requests" "--max-turns keeps the first turns"
check_contains "$WORK/long.err" "warning: 1 conversation has more than 2 user turns; only the first 2 of each were imported (--max-turns)" \
  "the cut is said"

status=0
"$RETRACE" replay "$WORK/gold.rtrace" --target http://127.0.0.1:1 -c 1 --filter 'path:[' --out "$WORK/f.rtrace" \
  2>"$WORK/filter.err" >/dev/null || status=$?
[[ $status -ne 0 ]] || fail "a filter with an unclosed '[' exited 0"
check_contains "$WORK/filter.err" "bad --filter 'path:[': the '[' at character 6 opens a character class that no ']' closes" \
  "the filter error"

printf '{"prompt": "=HYPERLINK(\\"http://x\\")"}\n{"prompt": "-1"}\n' >"$WORK/formula.jsonl"
"$RETRACE" import "$WORK/formula.jsonl" --out "$WORK/formula.rtrace" 2>/dev/null
"$RETRACE" export --csv "$WORK/formula.rtrace" >"$WORK/formula.csv"
check_contains "$WORK/formula.csv" "\"'=HYPERLINK(\"\"http://x\"\")\"" "a formula cell gets a leading quote"
echo "PASS import_bounds"
