#!/usr/bin/env bash
# An exported trace edited to carry CR/LF in a request's header value, target, header name or
# method cannot be imported back: import refuses it with the line and the part named, and writes
# nothing. (The trace reader and replay refuse such requests too: tests/format_limits_test.cpp.)
. "$(dirname "$0")/lib.sh"

"$RETRACE" import "$ROOT/traces/gold-intents.jsonl" --out "$WORK/gold.rtrace" 2>/dev/null
"$RETRACE" export "$WORK/gold.rtrace" >"$WORK/export.jsonl"
"$RETRACE" import "$WORK/export.jsonl" --out "$WORK/back.rtrace" 2>/dev/null || fail "an unedited export does not import back"

for edit in value target name method; do
  python3 - "$WORK/export.jsonl" "$WORK/$edit.jsonl" "$edit" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
row = json.loads(lines[3])
request = row["exchange"]["request"]
edit = sys.argv[3]
if edit == "value":
    request["headers"].append(["X-Note", "a\r\nInjected: yes"])
elif edit == "target":
    request["target"] = "/v1/chat/completions HTTP/1.1\r\n\r\nPOST /admin"
elif edit == "name":
    request["headers"].append(["X-A\r\nInjected", "yes"])
else:
    request["method"] = "POST /x HTTP/1.1\r\nInjected:"
lines[3] = json.dumps(row)
open(sys.argv[2], "w").write("\n".join(lines) + "\n")
PY
  status=0
  "$RETRACE" import "$WORK/$edit.jsonl" --out "$WORK/$edit.rtrace" 2>"$WORK/$edit.err" || status=$?
  check_eq "$status" 2 "import of an export with CR/LF in the $edit"
  check_contains "$WORK/$edit.err" ":4: " "the error names the line ($edit)"
  check_contains "$WORK/$edit.err" "cannot go on the wire" "the error says why ($edit)"
  check "no trace is left ($edit)" test ! -e "$WORK/$edit.rtrace"
done
check_contains "$WORK/value.err" "header 2 (X-Note): its value has a control byte (0x0d at byte 1)" "the value is named"
check_contains "$WORK/target.err" "the target has a space or control byte" "the target is named"
echo "PASS import_wire_injection"
