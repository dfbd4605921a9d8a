#!/usr/bin/env bash
# import → inspect → export → cat on the shipped gold set; the stock `zstd -dc | capnp decode`
# pipeline; recovery of a torn tail; import errors that name the line and leave no file.
. "$(dirname "$0")/lib.sh"

trace=$WORK/gold.rtrace
"$RETRACE" import "$ROOT/traces/gold-intents.jsonl" --out "$trace" 2>"$WORK/import.err" \
  || { cat "$WORK/import.err" >&2; fail "import of the gold set failed"; }
check "the trace exists" test -s "$trace"
check_eq "$(stat -c %a "$trace")" 600 "trace file mode"
check_contains "$WORK/import.err" "imported 20 requests" "import summary"

# inspect: counts, header, index
"$RETRACE" inspect "$trace" --json >"$WORK/inspect.json"
for want in '"exchanges":20' '"with_expected":20' '"torn":false' '"index":true' '"source":"imported"' \
            '"sessions":0' '"tokens":0'; do
  check_contains "$WORK/inspect.json" "$want" "inspect --json"
done
"$RETRACE" inspect "$trace" >"$WORK/inspect.txt"
check_contains "$WORK/inspect.txt" "exchanges     20 (ids 1..20)" "inspect text"
check_contains "$WORK/inspect.txt" "damage        none" "inspect text"
check_contains "$WORK/inspect.txt" "index         present" "inspect text"

# export: one header line and 20 exchange lines, fields intact
"$RETRACE" export "$trace" >"$WORK/export.jsonl" 2>"$WORK/export.err"
check_eq "$(wc -l <"$WORK/export.jsonl")" 21 "exported lines"
check_eq "$(head -1 "$WORK/export.jsonl" | cut -c1-11)" '{"header":{' "first exported record"
check_eq "$(grep -c '^{"exchange":{' "$WORK/export.jsonl")" 20 "exported exchanges"
check_contains "$WORK/export.jsonl" '"labels":{"id":"gold-01"}' "export labels"
check_contains "$WORK/export.jsonl" '"expected":"billing"' "export expected"
check_contains "$WORK/export.jsonl" '"target":"/v1/chat/completions"' "export target"
check_eq "$(grep -c '\\"max_tokens\\":16' "$WORK/export.jsonl")" 20 "request bodies keep max_tokens"
check_eq "$(stat -c %s "$WORK/export.err")" 0 "export of a whole trace warns about nothing"

# cat: a human view
"$RETRACE" cat "$trace" --id 3 >"$WORK/cat.txt"
check_contains "$WORK/cat.txt" "#3  POST /v1/chat/completions" "cat header line"
check_contains "$WORK/cat.txt" "request: The blender arrived broken" "cat request summary"
check_contains "$WORK/cat.txt" "expected: refund" "cat expected answer"
check_eq "$(grep -c '^#' "$WORK/cat.txt")" 1 "cat --id shows one exchange"
"$RETRACE" cat "$trace" >"$WORK/cat-all.txt"
check_eq "$(grep -c '^#' "$WORK/cat-all.txt")" 20 "cat shows every exchange"
if "$RETRACE" cat "$trace" --id 99 >/dev/null 2>"$WORK/cat.err"; then fail "cat --id 99 succeeded"; fi
check_contains "$WORK/cat.err" "no exchange with id 99" "cat of a missing id"

# The stock tools read the file: zstd skips the index frame, capnp decodes every record.
zstd -dc "$trace" | capnp decode "$ROOT/format/trace.capnp" Record >"$WORK/decoded.txt"
check_eq "$(grep -c '^( *header = ' "$WORK/decoded.txt")" 1 "capnp decode: header records"
check_eq "$(grep -c '^( *exchange = ' "$WORK/decoded.txt")" 20 "capnp decode: exchange records"
check_contains "$WORK/decoded.txt" 'expected = "change_address"' "capnp decode: fields"

# A torn tail (what kill -9 of a writer leaves): one frame per exchange, then cut the file.
import_numbered "$WORK/many.rtrace" 300 '{"id": "q%d", "prompt": "question number %d about the weather in town %d"}' \
  --flush-every 1
size=$(stat -c %s "$WORK/many.rtrace")
cut_at=$((size * 6 / 10))
truncate -s "$cut_at" "$WORK/many.rtrace"
"$RETRACE" inspect "$WORK/many.rtrace" --json >"$WORK/torn.json"
check_contains "$WORK/torn.json" '"torn":true' "inspect reports the torn tail"
check_contains "$WORK/torn.json" '"index":false' "the cut index is gone"
recovered=$(grep -oE '"exchanges":[0-9]+' "$WORK/torn.json" | cut -d: -f2)
from=$(grep -oE '"dropped_from_offset":[0-9]+' "$WORK/torn.json" | cut -d: -f2)
dropped=$(grep -oE '"dropped_bytes":[0-9]+' "$WORK/torn.json" | cut -d: -f2)
check "some exchanges recovered ($recovered)" test "$recovered" -gt 100 -a "$recovered" -lt 300
check_eq "$((from + dropped))" "$cut_at" "dropped bytes run to the end of the file"
"$RETRACE" export "$WORK/many.rtrace" >"$WORK/torn.jsonl" 2>"$WORK/torn.err" \
  || fail "export of a torn trace failed"
check_eq "$(wc -l <"$WORK/torn.jsonl")" "$((recovered + 1))" "export of a torn trace"
check_contains "$WORK/torn.err" "torn tail: dropped $dropped bytes from offset $from" "export warning"
"$RETRACE" inspect "$WORK/many.rtrace" >"$WORK/torn.txt"
check_contains "$WORK/torn.txt" "torn tail: dropped $dropped bytes" "inspect text on a torn trace"

# Import errors: the line is named, the status is 2, nothing is left behind.
{ echo '{"prompt": "one"}'; echo '{"prompt": "two"}'; echo '{"prompt": "three"'; } >"$WORK/bad.jsonl"
status=0
"$RETRACE" import "$WORK/bad.jsonl" --out "$WORK/bad.rtrace" 2>"$WORK/bad.err" || status=$?
check_eq "$status" 2 "exit status of a bad import"
check_contains "$WORK/bad.err" "$WORK/bad.jsonl:3: not valid JSON" "bad line message"
check "no output file" test ! -e "$WORK/bad.rtrace"
check "no temporary file" test ! -e "$WORK/bad.rtrace.tmp"

# export → import → export is the identity, header included; a filtered export is a trace again.
"$RETRACE" import "$WORK/export.jsonl" --out "$WORK/again.rtrace" 2>"$WORK/again.err" \
  || { cat "$WORK/again.err" >&2; fail "import of export lines failed"; }
check_contains "$WORK/again.err" "imported 20 exchanges" "import of export lines"
"$RETRACE" export "$WORK/again.rtrace" >"$WORK/again.jsonl"
check "export of the re-imported trace is byte-identical" cmp -s "$WORK/export.jsonl" "$WORK/again.jsonl"
grep -v '"expected":"billing"' "$WORK/export.jsonl" | zstd -q >"$WORK/filtered.jsonl.zst"
billing=$(grep -c '"expected":"billing"' "$WORK/export.jsonl")
"$RETRACE" import "$WORK/filtered.jsonl.zst" --out "$WORK/filtered.rtrace" 2>/dev/null \
  || fail "import of filtered, compressed export lines failed"
"$RETRACE" inspect "$WORK/filtered.rtrace" --json >"$WORK/filtered.json"
check_contains "$WORK/filtered.json" "\"exchanges\":$((20 - billing))" "filtered trace keeps the rest"
# A credential added by hand does not reach the file; a bad line is named and leaves nothing.
python3 - "$WORK/export.jsonl" >"$WORK/planted.jsonl" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
record = json.loads(lines[1])
record["exchange"]["request"]["headers"].append(["Authorization", "Bearer sk-planted"])
lines[1] = json.dumps(record)
print("\n".join(lines))
PY
check "the credential was planted" grep -q sk-planted "$WORK/planted.jsonl"
"$RETRACE" import "$WORK/planted.jsonl" --out "$WORK/planted.rtrace" 2>/dev/null || fail "import of planted"
check "the planted credential is redacted" bash -c "! $RETRACE export $WORK/planted.rtrace | grep -q sk-planted"
{ head -3 "$WORK/export.jsonl"; echo '{"exchange": {"id": "three"}}'; } >"$WORK/badexport.jsonl"
status=0
"$RETRACE" import "$WORK/badexport.jsonl" --out "$WORK/badexport.rtrace" 2>"$WORK/badexport.err" || status=$?
check_eq "$status" 2 "exit status of a bad export line"
check_contains "$WORK/badexport.err" "$WORK/badexport.jsonl:4: " "bad export line is named"
check "no output file for a bad export line" test ! -e "$WORK/badexport.rtrace"

# Something that is not a trace is described.
status=0
"$RETRACE" inspect "$ROOT/traces/gold-intents.jsonl" >/dev/null 2>"$WORK/notrace.err" || status=$?
check_eq "$status" 2 "exit status of inspect on JSONL"
check_contains "$WORK/notrace.err" "retrace import" "inspect on JSONL says what to try"

# Every subcommand documents itself with an example.
for command in import export inspect cat; do
  "$RETRACE" "$command" --help >"$WORK/help.txt"
  check_contains "$WORK/help.txt" "Example:" "$command --help"
done
echo "format round trip: ok"
