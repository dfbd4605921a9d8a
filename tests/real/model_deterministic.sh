#!/usr/bin/env bash
# The tiny model is the same file every time: made twice more by the generator's self-check, it
# equals the model that llama-server.sh serves on this machine, byte for byte.
. "$(dirname "$0")/lib.sh"
"$LLAMA" check 2>"$WORK/check.err" || { cat "$WORK/check.err" >&2; fail "llama-server.sh check"; }
check_contains "$WORK/check.err" "the same file every time" "the check says what it verified"
echo "PASS real.model_deterministic"
