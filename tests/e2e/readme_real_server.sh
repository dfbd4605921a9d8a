#!/usr/bin/env bash
# README.md's blocks, run as they stand by the guides' harness (tests/docs/lib.sh: taken from
# README.md here, so the two cannot drift): the tour against retrace serve serving a model name no
# dataset mentions, its target given with /v1; every command in it must succeed, and its outputs
# must be there. The two commands and the install blocks are not run here, and the test says why.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/docs/lib.sh"

GUIDE_SERVE_FLAGS="--model example-org/chat-model-v2" run_guide README.md
check_contains "$WORK/guide.err" "=== README.md line" "the README's tour ran"
for file in gold.rtrace c1.rtrace c16.rtrace study/summary.json study.html diff.html; do
  [[ -s "$GUIDE_RUN/$file" ]] || fail "the README's tour did not write $file"
done
check_contains "$WORK/guide.err" "go to example-org/chat-model-v2" "the model substitution is said"
check_contains "$GUIDE_RUN/study/summary.md" '`example-org/chat-model-v2` as the server named it' "the study's scope names the served model"
check_eq "$("$RETRACE" stats "$GUIDE_RUN/c16.rtrace" --json | jq -r .completed)" 20 "completed requests at -c 16"
check_eq "$(grep -c 'skipped' "$WORK/guide.skipped")" 3 "README blocks not run here (the two commands, install twice)"
echo "ok"
