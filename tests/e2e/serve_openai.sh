#!/usr/bin/env bash
# Compatibility with an independent client: the official `openai` npm package streams chat and
# completions from retrace serve and gets the same text as non-streamed calls.
. "$(dirname "$0")/lib.sh"

command -v node >/dev/null || fail "node is required (Node.js 20)"
[[ -f "$ROOT/tests/npm/node_modules/openai/index.mjs" ]] || fail "openai npm client missing: run 'npm ci' in tests/npm"
start_listening SIM "$RETRACE" serve --listen 127.0.0.1:0 --decode-step-ms 1
node "$ROOT/tests/e2e/serve_openai.mjs" "$ROOT" "$SIM_URL" || fail "openai client run failed"
stop "$SIM_PID" || fail "serve exited non-zero on SIGTERM"
echo "serve_openai: ok"
