#!/usr/bin/env bash
# bisect --over values --run 'CMD {}': CMD "deploys" each probed value (here: restarts the
# simulator with that weights seed) before the replay; its failure aborts with its output shown.
. "$(dirname "$0")/lib.sh"

"$RETRACE" import "$ROOT/traces/open-ended.jsonl" --out "$WORK/open.rtrace" 2>/dev/null
port=$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")
cat >"$WORK/deploy.sh" <<SCRIPT
#!/usr/bin/env bash
# Restart the server on a fixed port with weights seed \$1 (values v0/v1 map to seeds 0/1).
set -eu
# The previous server is gone (its port free) before the next starts, and the next one's
# "listening" is read from a fresh file: the old file's line, read before the new server's
# redirection truncated it, once sent the probe to the dying server.
if [[ -f "$WORK/server.pid" ]]; then
  old=\$(cat "$WORK/server.pid")
  kill "\$old" 2>/dev/null || true
  for _ in \$(seq 1 600); do  # gone, or a zombie (its sockets closed) nobody reaped yet
    state=\$(awk '{print \$3}' "/proc/\$old/stat" 2>/dev/null || true)
    [[ -z "\$state" || "\$state" == Z ]] && break
    sleep 0.05
  done
  [[ -z "\$state" || "\$state" == Z ]] || { echo "the previous server did not exit" >&2; exit 1; }
fi
rm -f "$WORK/server.out"
seed=\${1#v}
"$RETRACE" serve --listen 127.0.0.1:$port --latency-model off --weights-seed "\$seed" \
  >"$WORK/server.out" 2>"$WORK/server.err" &
echo \$! >"$WORK/server.pid"
for _ in \$(seq 1 600); do grep -q listening "$WORK/server.out" 2>/dev/null && exit 0; sleep 0.05; done
echo "server did not start" >&2; exit 1
SCRIPT
chmod +x "$WORK/deploy.sh"
cleanup_server() { [[ -f "$WORK/server.pid" ]] && kill "$(cat "$WORK/server.pid")" 2>/dev/null || true; }

status=0
"$RETRACE" bisect --over values v0,v0,v0,v0,v1,v1 --run "$WORK/deploy.sh {}" --trace "$WORK/open.rtrace" \
  --target "http://127.0.0.1:$port" --limit 6 --out "$WORK/b" >"$WORK/b.out" 2>"$WORK/b.err" || status=$?
cleanup_server
[[ $status == 1 ]] || { cat "$WORK/b.out" "$WORK/b.err" >&2; fail "bisect over values: exit $status, want 1"; }
check_contains "$WORK/b.out" "boundary: value v1" "the first differing value"
check_contains "$WORK/b.out" "\$ $WORK/deploy.sh v" "each probe's command is shown"
probes=$(grep -c '^probe ' "$WORK/b.out")
(( probes <= 5 )) || fail "$probes probes over 6 values; the budget is 5"
# The boundary is index 4: the value before it (index 3, also v0) was probed and is the same.
check_contains "$WORK/b.out" "value v0 does not" "the lower neighbour"

# A failing --run aborts with exit 2 and shows the command's output.
status=0
"$RETRACE" bisect --over values a,b,c --run 'echo deploying {} failed here; exit 3' \
  --trace "$WORK/open.rtrace" --target "http://127.0.0.1:$port" --out "$WORK/f" \
  >"$WORK/f.out" 2>"$WORK/f.err" || status=$?
check_eq "$status" "2" "a failing --run command"
check_contains "$WORK/f.err" "deploying a failed here" "the command's output is shown"
check_contains "$WORK/f.err" "exit 3" "its exit status is shown"
echo "ok"
