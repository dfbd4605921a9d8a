#!/usr/bin/env bash
# The README's "Against a real server" block, run as it stands (taken from README.md here, so the
# two cannot drift) against retrace serve serving a model name no dataset mentions, its target
# given with /v1: every command in it must succeed, and its outputs must be there.
. "$(dirname "$0")/lib.sh"

awk '/^## Against a real server/{section=1} section && /^```sh$/{inside=1; next}
     inside && /^```$/{exit} inside{print}' "$ROOT/README.md" >"$WORK/block.sh"
[[ -s "$WORK/block.sh" ]] || fail "no sh block under '## Against a real server' in README.md"
check_contains "$WORK/block.sh" 'retrace replay' "the block replays"

# The latency model off keeps it quick; the outputs are the same either way.
start_listening SIM "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off --model example-org/chat-model-v2
mkdir -p "$WORK/bin" "$WORK/run"
ln -s "$RETRACE" "$WORK/bin/retrace"
ln -s "$ROOT/traces" "$WORK/run/traces"
(cd "$WORK/run" && PATH="$WORK/bin:$PATH" TARGET="$SIM_URL/v1" bash -euo pipefail "$WORK/block.sh") \
  >"$WORK/block.out" 2>"$WORK/block.err" || { tail -n 40 "$WORK/block.err" >&2; fail "the README block failed"; }
for file in gold.rtrace c1.rtrace c16.rtrace r5.rtrace study/summary.json study.html diff.html; do
  [[ -s "$WORK/run/$file" ]] || fail "the README block did not write $file"
done
check_contains "$WORK/block.err" "go to example-org/chat-model-v2" "the model substitution is said"
check_contains "$WORK/run/study/summary.md" '`example-org/chat-model-v2` as the server named it' "the study's scope names the served model"
check_eq "$("$RETRACE" stats "$WORK/run/c16.rtrace" --json | jq -r .completed)" 20 "completed requests at -c 16"
echo "ok"
