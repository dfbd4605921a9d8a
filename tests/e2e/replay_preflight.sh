#!/usr/bin/env bash
# The preflight before replay, sweep and bisect send anything, against retrace serve started
# under other model names: a --target ending in /v1 is the server's root; an imported dataset
# (which names no model) gets the target's one model, said on stderr and recorded in the header
# with the identified server and the token-id mode --token-ids auto chose; several served models
# stop the run before any traffic unless --model picks one; nothing listening is exit 2, naming
# the URL; failed requests are exit 1 for replay and 3 for sweep and bisect, unless
# --max-error-rate tolerates them.
. "$(dirname "$0")/lib.sh"

start_listening ONE "$RETRACE" serve --listen 127.0.0.1:0 --model acme/one-7b
start_listening TWO "$RETRACE" serve --listen 127.0.0.1:0 --model-name first-model --model second-model
"$RETRACE" import "$ROOT/traces/gold-intents.jsonl" --out "$WORK/gold.rtrace" >/dev/null
header() { "$RETRACE" export "$1" | jq -c 'select(.header) | .header'; }
status_of() { local status=0; "$@" >"$WORK/out" 2>"$WORK/err" || status=$?; echo "$status"; }

# --- import invents no model
"$RETRACE" export "$WORK/gold.rtrace" | jq -r 'select(.exchange) | .exchange.request.body | fromjson | .model // "none"' \
  | sort -u >"$WORK/models"
check_eq "$(cat "$WORK/models")" none "models of imported bodies"

# --- one model, target given as .../v1/: every request completes (none went to /v1/v1/...)
check_eq "$(status_of "$RETRACE" replay "$WORK/gold.rtrace" --target "$ONE_URL/v1/" -c 4 --limit 5 \
  --set max_tokens=4 --out "$WORK/one.rtrace" --json)" 0 "exit status against one model"
check_eq "$(jq -r .completed "$WORK/out")" 5 "completed against one model"
check_contains "$WORK/err" "go to acme/one-7b, the one model" "the substitution is said on stderr"
check_eq "$(grep -c 'acme/one-7b' "$WORK/err")" 1 "said once"
header "$WORK/one.rtrace" >"$WORK/one.header"
check_eq "$(jq -r '.target' "$WORK/one.header")" "$ONE_URL" "the header's target has no /v1"
jq -r '.server_info | fromjson' "$WORK/one.header" >"$WORK/one.info"
check_eq "$(jq -r '.server.kind' "$WORK/one.info")" retrace-serve "identified server"
check_eq "$(jq -r '.preflight.model.name' "$WORK/one.info")" acme/one-7b "substituted model in the header"
check_contains "$WORK/one.info" "replaces (none)" "what the model replaced"
check_eq "$(jq -r '.preflight.token_ids.mode' "$WORK/one.info")" logprobs "--token-ids auto for retrace serve"
check_eq "$(jq -r '.settings | fromjson | .token_ids' "$WORK/one.header")" logprobs "settings say the mode sent"
"$RETRACE" export "$WORK/one.rtrace" | jq -r 'select(.exchange) | .exchange.request.target' | sort -u >"$WORK/targets"
check_eq "$(cat "$WORK/targets")" /v1/chat/completions "request targets"
"$RETRACE" export "$WORK/one.rtrace" | jq -r 'select(.exchange) | .exchange.request.body | fromjson | .model' | sort -u >"$WORK/sent"
check_eq "$(cat "$WORK/sent")" acme/one-7b "model sent"

# --- --token-ids off keeps the bodies' fields as they were
"$RETRACE" replay "$WORK/gold.rtrace" --target "$ONE_URL" -c 1 --limit 1 --token-ids off --out "$WORK/off.rtrace" >/dev/null 2>&1
"$RETRACE" export "$WORK/off.rtrace" | jq -e 'select(.exchange) | .exchange.request.body | fromjson | has("logprobs") | not' >/dev/null \
  || fail "--token-ids off added logprobs"

# --- several models: stop before any traffic, list them, point to --model
check_eq "$(status_of "$RETRACE" replay "$WORK/gold.rtrace" --target "$TWO_URL" -c 4 --out "$WORK/two.rtrace")" 2 "exit status with two models"
check_contains "$WORK/err" "first-model, second-model" "the served models are listed"
check_contains "$WORK/err" "--model NAME" "the fix is named"
[[ ! -e "$WORK/two.rtrace" && ! -e "$WORK/two.rtrace.partial" ]] || fail "a trace was written although nothing ran"
check_eq "$(curl -sS "$TWO_URL/metrics" | awk '/^retrace_sim_requests_served_total[{ ]/{s+=$2} END{print s+0}')" 0 "requests the two-model server saw"
check_eq "$(status_of "$RETRACE" replay "$WORK/gold.rtrace" --target "$TWO_URL" -c 4 --limit 3 --set max_tokens=4 \
  --model second-model --out "$WORK/two.rtrace" --json)" 0 "exit status with --model"
check_eq "$(jq -r .completed "$WORK/out")" 3 "completed with --model"
"$RETRACE" export "$WORK/two.rtrace" | jq -r 'select(.exchange) | .exchange.request.body | fromjson | .model' | sort -u >"$WORK/sent"
check_eq "$(cat "$WORK/sent")" second-model "model sent with --model"

# --- nothing listening: exit 2 before anything, naming the URL
start_listening GONE "$RETRACE" serve --listen 127.0.0.1:0
stop "$GONE_PID" || true
for command in "replay $WORK/gold.rtrace --target $GONE_URL -c 1 --out $WORK/gone.rtrace" \
               "sweep $WORK/gold.rtrace --target $GONE_URL --concurrency 1 --repeat 1 --out $WORK/gone-sweep" \
               "bisect --over concurrency --range 1..2 --trace $WORK/gold.rtrace --target $GONE_URL --out $WORK/gone-bisect"; do
  read -ra argv <<<"$command"
  check_eq "$(status_of "$RETRACE" "${argv[@]}")" 2 "exit status of ${argv[0]} with nothing listening"
  check_contains "$WORK/err" "nothing answers at $GONE_URL" "${argv[0]} names the URL"
done

# --- failed requests: replay exits 1, or 0 within --max-error-rate; sweep and bisect exit 3
check_eq "$(status_of "$RETRACE" replay "$WORK/gold.rtrace" --target "$ONE_URL" -c 2 --limit 4 --set max_tokens=-1 \
  --out "$WORK/bad.rtrace")" 1 "exit status when requests fail"
check_contains "$WORK/err" "4 of 4 requests failed" "the summary says why"
check_eq "$(status_of "$RETRACE" replay "$WORK/gold.rtrace" --target "$ONE_URL" -c 2 --limit 4 --set max_tokens=-1 \
  --max-error-rate 1 --out "$WORK/bad2.rtrace")" 0 "exit status within --max-error-rate"
check_eq "$(status_of "$RETRACE" sweep "$WORK/gold.rtrace" --target "$ONE_URL" --concurrency 1,2 --repeat 1 --limit 2 \
  --set max_tokens=-1 --out "$WORK/bad-sweep")" 3 "sweep exit status when requests fail"
check_contains "$WORK/err" "requests failed" "sweep says why"
check_eq "$(status_of "$RETRACE" bisect --over concurrency --range 1..2 --trace "$WORK/gold.rtrace" --target "$ONE_URL" \
  --limit 2 --set max_tokens=-1 --out "$WORK/bad-bisect")" 3 "bisect exit status when requests fail"
check_contains "$WORK/err" "requests failed" "bisect says why"
echo "ok"
