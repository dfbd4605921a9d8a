#!/usr/bin/env bash
# Under the widest umask, what retrace writes stays private: a report 0600, a sweep's directory
# 0700 with its files 0600; and a planted `report.html.tmp` symlink does not redirect the write.
. "$(dirname "$0")/lib.sh"
umask 000

"$RETRACE" import "$ROOT/traces/gold-intents.jsonl" --out "$WORK/gold.rtrace" 2>/dev/null
start_listening serve "$RETRACE" serve --listen 127.0.0.1:0
"$RETRACE" sweep "$WORK/gold.rtrace" --target "$serve_URL" --concurrency 1,2 --out "$WORK/sweep/runs" \
  >/dev/null 2>"$WORK/sweep.err" || { cat "$WORK/sweep.err" >&2; fail "sweep failed"; }
check_eq "$(stat -c %a "$WORK/sweep")" 700 "a directory made above a sweep's"
check_eq "$(stat -c %a "$WORK/sweep/runs")" 700 "a sweep's directory"
for file in "$WORK"/sweep/runs/*; do
  check_eq "$(stat -c %a "$file")" 600 "$(basename "$file")"
done

echo "keep me" >"$WORK/victim"
ln -s "$WORK/victim" "$WORK/report.html.tmp"
"$RETRACE" report "$WORK/sweep/runs" -o "$WORK/report.html" >/dev/null
check_eq "$(cat "$WORK/victim")" "keep me" "a planted .tmp symlink redirected the report"
check_eq "$(stat -c %a "$WORK/report.html")" 600 "the report"
check_contains "$WORK/report.html" "<html" "the report was written"
echo "PASS private_outputs"
