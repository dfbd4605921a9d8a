#!/usr/bin/env bash
# The guides' harness (tests/docs/lib.sh) on guides written here: a guide whose blocks hold runs,
# with its hidden setup, variables carried from block to block, a skipped block said with its
# reason, an error's example checked by exit status and words, and other fences left alone; and
# each way a guide can be wrong fails, naming the line: a failing command in the middle of a
# block, another exit status, words not said, a checked-by test that never names the guide, an
# unknown mark, a broken link. Whatever a failing block left running is stopped with it.
. "$(dirname "$0")/lib.sh"

# guide NAME: writes $WORK/NAME.md from stdin. run NAME: runs it in a process of its own (its own
# scratch directory and cleanup), output in $WORK/NAME.log; returns its exit status.
guide() { cat >"$WORK/$1.md"; }
run() {
  bash -c '. "$1/tests/e2e/lib.sh"; . "$1/tests/docs/lib.sh"; run_guide "$2"' _ "$ROOT" "$WORK/$1.md" \
    >"$WORK/$1.log" 2>&1
}
fails() {  # fails NAME TEXT: the guide's test fails, saying TEXT
  local status=0
  run "$1" || status=$?
  (( status != 0 )) || { cat "$WORK/$1.log" >&2; fail "the guide $1 passed"; }
  check_contains "$WORK/$1.log" "$2" "the failure of guide $1"
}

guide good <<'MD'
# A guide
<!-- test-setup
retrace import traces/gold-intents.jsonl --out gold.rtrace >/dev/null
-->
```sh
n=$(retrace export gold.rtrace | grep -c '"exchange"')
retrace replay gold.rtrace --target http://127.0.0.1:8000 -c 4 --out run.rtrace
```
The variable is still there:
```sh
test "$n" = 20 && echo "exchanges: $n"
```
<!-- test: skip needs a GPU fleet -->
```sh
false
```
<!-- test: exit 2 -->
<!-- test: says already exists -->
```sh
retrace replay gold.rtrace --target http://127.0.0.1:8000 -c 4 --out run.rtrace
```
```text
false
```
MD
run good || { cat "$WORK/good.log" >&2; fail "a guide whose blocks hold failed"; }
check_contains "$WORK/good.log" "line 14: skipped: needs a GPU fleet" "the skipped block is said with its reason"

guide middle <<'MD'
```sh
true
retrace inspect no-such.rtrace
true
```
MD
fails middle "the block after the last '===' line above failed"
check_contains "$WORK/middle.log" "=== $WORK/middle.md line 1 (block)" "the failing block is named by its line"

guide status <<'MD'
<!-- test: exit 1 -->
```sh
retrace inspect no-such.rtrace
```
MD
fails status "exit 2, the guide says 1"

guide words <<'MD'
<!-- test: exit 2 -->
<!-- test: says words the error never says -->
```sh
retrace inspect no-such.rtrace
```
MD
fails words "the output does not say: words the error never says"

guide claim <<'MD'
<!-- test: checked-by tests/e2e/cli_help.sh -->
```sh
true
```
MD
fails claim "checked-by tests/e2e/cli_help.sh, which never names"

guide mark <<'MD'
<!-- test: exits 2 -->
```sh
true
```
MD
fails mark "unknown mark '<!-- test: exits 2 -->'"

guide link <<'MD'
See [the missing guide](nowhere.md) and [a heading](#no-such-heading).
```sh
true
```
MD
fails link "broken link nowhere.md"
check_contains "$WORK/link.log" "has no heading #no-such-heading" "a broken anchor"

# A block that fails with a process in the background: the process is stopped with the test.
guide left <<'MD'
```sh
sleep 600 &
echo $! > left.pid
cp left.pid "$LEFT_PID_FILE"
false
```
MD
export LEFT_PID_FILE="$WORK/left.pid"
fails left "the block after the last '===' line above failed"
pid=$(cat "$WORK/left.pid")
for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$pid" 2>/dev/null && { kill "$pid"; fail "the background process $pid of a failed block was left running"; }
echo "ok"
