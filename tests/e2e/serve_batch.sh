#!/usr/bin/env bash
# Batching and determinism: 32 greedy requests sent together really share one batch (per /metrics),
# give bit-identical outputs to the same requests sent one at a time, and with --batch-variance
# some of them change (near-tied choices flip when the reduction split follows the batch size).
. "$(dirname "$0")/lib.sh"

COUNT=32
# One at a time, flat out: batch size 1, where --batch-variance uses the same split as without it.
start_listening ALONE "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off --batch-variance
# Together, with the default latency model: each request lasts ~1.5 s, so all 32 overlap.
start_listening FIXED "$RETRACE" serve --listen 127.0.0.1:0
start_listening VARIED "$RETRACE" serve --listen 127.0.0.1:0 --batch-variance

for i in $(seq 1 $COUNT); do
  printf '{"model":"retrace-sim","prompt":"Question %d: what should we do about the order?","max_tokens":96,"temperature":0,"ignore_eos":true}' "$i" >"$WORK/body.$i"
done
# send URL PREFIX [--parallel...]: all COUNT requests in one curl process.
send() {
  local url=$1 prefix=$2; shift 2
  local args=() i
  for i in $(seq 1 $COUNT); do
    [[ $i -gt 1 ]] && args+=(--next)
    args+=(-sS -H 'content-type: application/json' --data-binary "@$WORK/body.$i" -o "$WORK/$prefix.$i" "$url/v1/completions")
  done
  curl -sS "$@" "${args[@]}"
}
send "$ALONE_URL" alone
SENDERS=()
send "$FIXED_URL" fixed --parallel --parallel-immediate --parallel-max $COUNT &
SENDERS+=($!)
send "$VARIED_URL" varied --parallel --parallel-immediate --parallel-max $COUNT &
SENDERS+=($!)
wait "${SENDERS[@]}"

batch_max() { curl -sS "$1/metrics" | grep '^retrace_sim_batch_sequences_max' | awk '{print $2}'; }
check_eq "$(batch_max "$FIXED_URL")" $COUNT "largest batch without variance"
check_eq "$(batch_max "$VARIED_URL")" $COUNT "largest batch with variance"

differ=0
for i in $(seq 1 $COUNT); do
  alone=$(jq -j '.choices[0].text' "$WORK/alone.$i")
  [[ ${#alone} -gt 100 ]] || fail "request $i: short or missing output: $(head -c 300 "$WORK/alone.$i")"
  check_eq "$(jq -j '.choices[0].text' "$WORK/fixed.$i")" "$alone" "request $i at concurrency $COUNT without --batch-variance"
  [[ "$(jq -j '.choices[0].text' "$WORK/varied.$i")" == "$alone" ]] || differ=$((differ + 1))
done
echo "with --batch-variance, $differ of $COUNT outputs changed under load" >&2
[[ $differ -gt 0 ]] || fail "--batch-variance changed no output at concurrency $COUNT"
[[ $differ -lt $COUNT ]] || fail "--batch-variance changed every output: expected only near-ties to flip"

for pid in "$ALONE_PID" "$FIXED_PID" "$VARIED_PID"; do stop "$pid" || fail "serve exited non-zero"; done
echo "serve_batch: ok"
