# docs/shadow.md's command blocks, run as written (the fixed ports swapped for free ones, `retrace`
# the binary under test, from a directory holding the repository's traces/): the guide's shadow
# run ends with the gate failed (every candidate answer differs), its summary exists, and diff
# reads the run.
. "$(dirname "$0")/lib.sh"
mkdir -p "$WORK/bin" "$WORK/guide"
ln -s "$(realpath "$RETRACE")" "$WORK/bin/retrace"
ln -s "$ROOT/traces" "$WORK/guide/traces"
ports=($(python3 -c '
import socket
socks = [socket.socket() for _ in range(4)]
for s in socks: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))'))
python3 - "$ROOT/docs/shadow.md" "${ports[@]}" >"$WORK/guide/run.sh" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
for fixed, free in zip(("18100", "18101", "18102", "18103"), sys.argv[2:]):
    text = text.replace(fixed, free)
print("set -e")
for block in re.findall(r"```sh\n(.*?)```", text, re.S):
    print(block)
PY
(cd "$WORK/guide" && PATH="$WORK/bin:$PATH" bash "$WORK/guide/run.sh") >"$WORK/guide.out" 2>"$WORK/guide.err" ||
  { cat "$WORK/guide.err" >&2; fail "the guide's commands failed"; }
check_contains "$WORK/guide.out" "shadow exit status 1 (1: the gate failed)" "the guide's gate fails"
check_contains "$WORK/guide.err" "--max-pairs reached" "the guide's run ends at --max-pairs"
check_contains "$WORK/guide.out" "Candidate's excess over the control" "summary.md printed"
check_contains "$WORK/guide.out" "control" "diff printed the control run"
echo "ok"
