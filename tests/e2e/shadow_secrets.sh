#!/usr/bin/env bash
# retrace shadow --keep-secrets: record's flag, through record's switch, for all three traces. A
# client request carries a credential in a header (Authorization), in the query string (api_key=)
# and in the body (a top-level "api_key"); each mirror is sent its own credential
# (--control-header / --candidate-header), never the client's. Without the flag none of them
# reaches any file of the run (each leg's segments read raw), and every leg holds the redaction
# marker; with it, shadow warns on stderr and the primary's trace keeps the client's three
# credentials, each mirror's the query's, the body's and its own header.
. "$(dirname "$0")/lib.sh"

SERVE=(serve --listen 127.0.0.1:0 --latency-model off)
start_listening primary "$RETRACE" "${SERVE[@]}"
start_listening control "$RETRACE" "${SERVE[@]}"
start_listening candidate "$RETRACE" "${SERVE[@]}"

TAG="$RANDOM$RANDOM"
CLIENT_AUTH="sk-client-header-$TAG" QUERY_KEY="query-key-$TAG" BODY_KEY="body-key-$TAG"
export CONTROL_AUTH="Bearer control-cred-$TAG" CANDIDATE_AUTH="Bearer candidate-cred-$TAG"
LEGS=(primary control candidate)

# run NAME [FLAGS]: a shadow run into $WORK/NAME that mirrors one request with all three credentials.
run() {
  local name=$1; shift
  start_listening "$name" "$RETRACE" shadow --primary "$primary_URL" --control "$control_URL" \
    --candidate "$candidate_URL" --control-header Authorization=CONTROL_AUTH \
    --candidate-header Authorization=CANDIDATE_AUTH --out "$WORK/$name" --listen 127.0.0.1:0 \
    --report-every 50ms "$@"
  local url_var="${name}_URL" pid_var="${name}_PID"
  curl -sf -H "Authorization: Bearer $CLIENT_AUTH" -H 'Content-Type: application/json' \
    -d "{\"model\":\"retrace-sim\",\"prompt\":\"hello\",\"max_tokens\":4,\"api_key\":\"$BODY_KEY\"}" \
    "${!url_var}/v1/completions?api_key=$QUERY_KEY" >/dev/null || fail "$name: the client's request"
  written() { json "$WORK/$name/summary.json" "s.legs.control.written + s.legs.candidate.written"; }
  wait_until_output "$name: both mirrors' exchanges written" 2 written
  stop "${!pid_var}" || fail "$name: shadow did not exit 0"
  for leg in "${LEGS[@]}"; do
    "$RETRACE" export "$WORK/$name/$leg" >"$WORK/$name.$leg.jsonl" || fail "$name: export $leg"
    check_eq "$(grep -c '"exchange"' "$WORK/$name.$leg.jsonl")" 1 "$name: one exchange in the $leg leg"
    # Everything the leg wrote: the segments decompressed (zstd frames), and their raw bytes.
    cat "$WORK/$name/$leg"/* >"$WORK/$name.$leg.raw"
    zstd -dcq "$WORK/$name/$leg"/*.rtrace >>"$WORK/$name.$leg.raw" 2>/dev/null || true
  done
}

run redacted
check_eq "$(grep -c 'keep-secrets' "$WORK/redacted.err" || true)" 0 "no warning without the flag"
for leg in "${LEGS[@]}"; do
  for secret in "$CLIENT_AUTH" "$QUERY_KEY" "$BODY_KEY" "control-cred-$TAG" "candidate-cred-$TAG"; do
    if grep -qF "$secret" "$WORK/redacted.$leg.raw" "$WORK/redacted.$leg.jsonl"; then
      fail "without --keep-secrets, $secret reached the $leg leg's trace"
    fi
  done
  check_contains "$WORK/redacted.$leg.jsonl" "api_key=[redacted]" "$leg: the query's key redacted"
  check_contains "$WORK/redacted.$leg.jsonl" '\"api_key\":\"[redacted]\"' "$leg: the body's key redacted"
done
check_contains "$WORK/redacted.primary.jsonl" '["Authorization","[redacted]"]' "primary: the client's header redacted"
check_contains "$WORK/redacted.control.jsonl" '["Authorization","[redacted]"]' "control: its credential redacted"
check_contains "$WORK/redacted.candidate.jsonl" '["Authorization","[redacted]"]' "candidate: its credential redacted"

run kept --keep-secrets
check_contains "$WORK/kept.err" "retrace shadow: warning: --keep-secrets: Authorization, API keys and cookies will be written to $WORK/kept" \
  "the warning names the run's directory"
for leg in "${LEGS[@]}"; do
  check_contains "$WORK/kept.$leg.jsonl" "api_key=$QUERY_KEY" "$leg: --keep-secrets keeps the query's key"
  check_contains "$WORK/kept.$leg.jsonl" "\\\"api_key\\\":\\\"$BODY_KEY\\\"" "$leg: --keep-secrets keeps the body's key"
  check_contains "$WORK/kept.$leg.jsonl" '\"keep_secrets\":true' "$leg: its settings say so"
done
check_contains "$WORK/kept.primary.jsonl" "Bearer $CLIENT_AUTH" "primary: --keep-secrets keeps the client's header"
check_contains "$WORK/kept.control.jsonl" "$CONTROL_AUTH" "control: --keep-secrets keeps its own credential"
check_contains "$WORK/kept.candidate.jsonl" "$CANDIDATE_AUTH" "candidate: --keep-secrets keeps its own credential"
# What is sent does not change: a mirror never gets the client's credential.
for leg in control candidate; do
  if grep -qF "$CLIENT_AUTH" "$WORK/kept.$leg.jsonl"; then fail "the client's credential was sent to the $leg"; fi
done
echo "PASS shadow_secrets"
