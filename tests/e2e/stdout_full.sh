#!/usr/bin/env bash
# Write errors on stdout (issue 46 item 5): every command that prints its result on stdout —
# export, export --csv, cat, cat --json, stats --csv, inspect --json, diff --json, report -o - —
# exits 2 on a full disk (`> /dev/full`), saying on stderr after how many bytes, as its file
# outputs do; before, each exited 0 having written nothing. A closed pipe (`| head -c 1`) is still
# not an error: exit 0 and no message. One run of 20 replayed exchanges against `retrace serve`.
. "$(dirname "$0")/lib.sh"
[[ -w /dev/full ]] || { echo "SKIP: no /dev/full"; exit 77; }

start_listening SIM "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off
"$RETRACE" import "$ROOT/traces/gold-intents.jsonl" --out "$WORK/in.rtrace" 2>/dev/null
"$RETRACE" replay "$WORK/in.rtrace" --target "$SIM_URL" --out "$WORK/run.rtrace" -c 4 --limit 20 \
  >/dev/null 2>"$WORK/replay.err" || { cat "$WORK/replay.err" >&2; fail "replay failed"; }

run="$WORK/run.rtrace"
commands=(
  "export $run"
  "export --csv $run"
  "cat $run"
  "cat --json $run"
  "stats --csv $run"
  "inspect --json $run"
  "diff --json $run $run"
  "report -o - $run"
)
for command in "${commands[@]}"; do
  # shellcheck disable=SC2086 # the words of each command line are its arguments
  status=0; "$RETRACE" $command >/dev/full 2>"$WORK/full.err" || status=$?
  check_eq "$status" 2 "retrace $command > /dev/full exits 2"
  check_contains "$WORK/full.err" "writing stdout failed after 0 bytes: No space left on device" \
    "retrace $command > /dev/full says what failed and after how many bytes"
  # shellcheck disable=SC2086
  { status=0; "$RETRACE" $command 2>"$WORK/pipe.err" || status=$?; echo "$status" >"$WORK/pipe.status"; } |
    head -c 1 >/dev/null
  check_eq "$(cat "$WORK/pipe.status")" 0 "retrace $command | head -c 1: a closed pipe is not an error"
  [[ ! -s "$WORK/pipe.err" ]] || { cat "$WORK/pipe.err" >&2; fail "retrace $command | head -c 1 said something on stderr"; }
done

# The same output on a disk with room is whole, and export's lines go back through import.
"$RETRACE" export "$run" >"$WORK/run.jsonl"
check_eq "$(grep -c '"exchange"' "$WORK/run.jsonl")" 20 "export on a disk with room writes every line"
"$RETRACE" report -o - "$run" >"$WORK/page.html"
check_contains "$WORK/page.html" "</html>" "report -o - writes the whole page on stdout"
echo "PASS stdout_full"
