#!/usr/bin/env bash
# Memory and CPU per streamed token in flight (issue 28 item 5, issue 33, issue 44 item 4): C
# streams of TOKENS tokens each (default 16,000), all in flight at once, answered by `retrace
# serve --latency-model off`, replayed at -c C with `--token-ids off` and `auto` (the default: the
# simulator gives ids), directly and with `retrace record` in front. For each: the replay's peak
# RSS (GNU time) and the proxy's (VmHWM), minus their fixed cost (a one-request replay's peak; the
# idle proxy's), divided by the tokens in flight ("in total"), and the same minus the raw bytes
# of the C streams' events (which a client that keeps the stream uncompressed must hold, "beyond
# raw"); the replay's peak minus one such stream's alone, over the other C - 1 streams' tokens
# ("beyond one stream's": what a further token in flight costs); and the replay's CPU per token. With BEFORE=OTHER_BINARY each row is run with OTHER_BINARY
# and then RETRACE_BINARY, alternating, against the same server.
#
# The server's running batch is as large as the largest level (at least 64), so every stream is in
# it at once. Past 4 M tokens a level, the raw bytes and tokens are the first answer's times C
# (every answer is TOKENS tokens of near-equal events; exporting the whole trace to count them
# would be gigabytes of JSON; SAMPLE_PAST=N moves the threshold).
#
# Usage: [BEFORE=RETRACE_BINARY] bench/inflight.sh [RETRACE_BINARY] [CONCURRENCY...]
#        (default 16 64; TOKENS=16000; PATHS="direct record" and IDS="off auto" pick the rows)
#        1,000 streams of 16,000 tokens with logprobs: IDS=auto PATHS=direct bench/inflight.sh BIN 1000
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RETRACE=${1:-$ROOT/build/release/retrace}
shift || true
LEVELS=("$@")
[[ ${#LEVELS[@]} -gt 0 ]] || LEVELS=(16 64)
TOKENS=${TOKENS:-16000}
PATHS=${PATHS:-direct record}
BINARIES=()
[[ -z "${BEFORE:-}" ]] || BINARIES+=("$BEFORE")
BINARIES+=("$RETRACE")
. "$ROOT/bench/lib.sh"
bench_workdir inflight

MAX_BATCH=64
for c in "${LEVELS[@]}"; do (( c <= MAX_BATCH )) || MAX_BATCH=$c; done
"$RETRACE" serve --listen 127.0.0.1:0 --latency-model off --max-model-len 65536 --max-batch "$MAX_BATCH" \
  >"$WORK/serve.out" 2>"$WORK/serve.err" &
PIDS+=($!)
SIM=$(url_of serve)

sizes() {  # TRACE C : "RAW_BYTES TOKENS": every stored response event's bytes, every choice's tokens
  local scale=1 lines=cat
  if (( $2 * TOKENS > ${SAMPLE_PAST:-4000000} )); then scale=$2; lines="head -n 2"; fi  # the header and the first answer
  "$RETRACE" export "$1" | $lines | python3 -c '
import json, sys
raw = tokens = 0
scale = int(sys.argv[1])
for line in sys.stdin:
    exchange = json.loads(line).get("exchange")
    if exchange:
        response = exchange.get("response", {})
        raw += sum(len(e.get("data", "")) for e in response.get("events", [])) + len(response.get("body", ""))
        tokens += sum(len(c.get("tokens", [])) for c in exchange.get("choices", []))
print(raw * scale, tokens * scale)' "$scale"
}

replay_peak() {  # BINARY OUT_PREFIX TARGET ARGS... : "PEAK_KIB CPU_S" of one replay
  local binary=$1 prefix=$2 target=$3
  shift 3
  /usr/bin/time -f '%M %U %S' -o "$prefix.time" "$binary" replay "$WORK/in.rtrace" --target "$target" \
    --out "$prefix.rtrace" --force "$@" >"$prefix.txt" 2>"$prefix.err" || {
    cat "$prefix.err" >&2; exit 1; }
  awk '{printf "%d %.3f\n", $1, $2 + $3}' "$prefix.time"
}

streamed_chat_requests "$WORK/one.jsonl" 1 16
"$RETRACE" import "$WORK/one.jsonl" --out "$WORK/one.rtrace" --force 2>/dev/null
declare -A BASE
for binary in "${BINARIES[@]}"; do
  /usr/bin/time -f '%M' -o "$WORK/base.time" \
    "$binary" replay "$WORK/one.rtrace" --target "$SIM" --out "$WORK/base.rtrace" --force -c 1 >/dev/null
  BASE[$binary]=$(cat "$WORK/base.time")
done

# What one stream of TOKENS tokens costs alone (its peak RSS, by binary and --token-ids): the
# replay decodes and writes that one long exchange whatever the level, so a level's peak minus it,
# over the tokens of the other C - 1 streams, is what each further token in flight costs
# ("beyond one stream"), without the one exchange being decoded and written that "in total" spreads
# over the level's tokens (at -c 64 with logprobs ~20 MiB: 20 bytes a token there, 1.3 at -c 1,000).
streamed_chat_requests "$WORK/long.jsonl" 1 "$TOKENS"
"$RETRACE" import "$WORK/long.jsonl" --out "$WORK/long.rtrace" --force 2>/dev/null
declare -A ONE
for binary in "${BINARIES[@]}"; do
  for ids in ${IDS:-off auto}; do
    /usr/bin/time -f '%M' -o "$WORK/one_long.time" "$binary" replay "$WORK/long.rtrace" --target "$SIM" \
      --out "$WORK/one_long.rtrace" --force -c 1 --token-ids "$ids" >/dev/null
    ONE[$binary,$ids]=$(cat "$WORK/one_long.time")
  done
done

row() {  # C IDS BINARY PATH PEAK_KIB FIXED_KIB RAW TOKENS CPU_S [ONE_STREAM_KIB]
  awk -v c="$1" -v ids="$2" -v bin="$3" -v path="$4" -v p="$5" -v b="$6" -v r="$7" -v t="$8" -v u="$9" \
    -v one="${10:-}" 'BEGIN {
    cpu = u == "" ? "" : sprintf("%.2f", u * 1e6 / t)
    beyond_one = (one == "" || c < 2) ? "" : sprintf("%.1f", (p - one) * 1024 / (t * (c - 1) / c))
    printf "| %d | %s | %s | %s | %.0f | %.1f | %.1f | %.0f | %s | %s |\n", c, ids, path, bin, p / 1024, r / 1048576,
      (p * 1024 - b * 1024) / t, (p * 1024 - b * 1024 - r) / t, beyond_one, cpu }'
}

echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; $TOKENS tokens a stream"
for binary in "${BINARIES[@]}"; do
  echo "binary $binary: fixed cost (a one-request replay's peak RSS) $((BASE[$binary] / 1024)) MiB;" \
    "one stream of $TOKENS tokens alone: $(for ids in ${IDS:-off auto}; do printf '%s %d MiB ' "$ids" $((ONE[$binary,$ids] / 1024)); done)"
done
echo
echo "| -c | --token-ids | path | binary | peak RSS (MiB) | raw event bytes (MiB) | bytes/token in flight, in total | beyond raw | beyond one stream's | replay CPU µs/token |"
echo "|---:|---|---|---|---:|---:|---:|---:|---:|---:|"
for c in "${LEVELS[@]}"; do
  streamed_chat_requests "$WORK/in.jsonl" "$c" "$TOKENS"
  "$RETRACE" import "$WORK/in.jsonl" --out "$WORK/in.rtrace" --force 2>/dev/null
  for ids in ${IDS:-off auto}; do
    raw=""
    for binary in "${BINARIES[@]}"; do
      label=$([[ "$binary" == "${BEFORE:-}" && "$binary" != "$RETRACE" ]] && echo before || echo after)
      if [[ " $PATHS " == *" direct "* ]]; then
        read -r peak cpu < <(replay_peak "$binary" "$WORK/direct" "$SIM" -c "$c" --token-ids "$ids")
        [[ -n "$raw" ]] || read -r raw tokens < <(sizes "$WORK/direct.rtrace" "$c")
        row "$c" "$ids" "$label" replay "$peak" "${BASE[$binary]}" "$raw" "$tokens" "$cpu" "${ONE[$binary,$ids]}"
      fi
      [[ " $PATHS " == *" record "* ]] || continue
      "$binary" record --upstream "$SIM" --listen 127.0.0.1:0 --out "$WORK/recorded.rtrace" --force \
        >"$WORK/record.out" 2>"$WORK/record.err" &
      proxy_pid=$!
      PIDS+=("$proxy_pid")
      proxy=$(url_of record)
      idle=$(awk '/VmHWM/ {print $2}' "/proc/$proxy_pid/status")  # the proxy's own fixed cost
      read -r rpeak rcpu < <(replay_peak "$binary" "$WORK/proxied" "$proxy" -c "$c" --token-ids "$ids")
      hwm=$(awk '/VmHWM/ {print $2}' "/proc/$proxy_pid/status")
      kill -INT "$proxy_pid"
      wait "$proxy_pid" || true
      rm -f "$WORK/record.out"
      [[ -n "$raw" ]] || read -r raw tokens < <(sizes "$WORK/proxied.rtrace" "$c")
      row "$c" "$ids" "$label" "replay through record" "$rpeak" "${BASE[$binary]}" "$raw" "$tokens" "$rcpu"
      row "$c" "$ids" "$label" "record (the proxy)" "$hwm" "$idle" "$raw" "$tokens" ""
    done
  done
done
