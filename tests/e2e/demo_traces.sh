#!/usr/bin/env bash
# `retrace demo --traces DIR` overrides the datasets built into the binary, and a folder without
# them is refused before anything starts, naming the missing file and the option.
. "$(dirname "$0")/lib.sh"

mkdir "$WORK/empty"
status=0
"$RETRACE" demo --quick --traces "$WORK/empty" --dir "$WORK/demo" >"$WORK/out" 2>"$WORK/err" || status=$?
check_eq "$status" 2 "demo with an empty --traces folder"
check_contains "$WORK/err" "$WORK/empty/gold-intents.jsonl is missing (--traces names the folder" \
  "the error names the missing file and the option"
[[ ! -e "$WORK/demo" ]] || fail "the demo wrote to its directory although its datasets were missing"
echo "ok"
