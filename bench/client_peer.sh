#!/usr/bin/env bash
# The replay client beside the peer users compare it with (issue 33): a Python client built the way
# `vllm bench serve`'s request function works (bench/peer_client.py: aiohttp, iter_any, split on
# blank lines, json.loads per event, a timestamp per token; it stores nothing), against
# `retrace serve --latency-model off` sending one token an event, the same streamed request, the same
# concurrency, in the same run. Printed per round: each client's CPU (user + system) per streamed
# token and their ratio; then the medians. CPU per token is what the machine's other load changes
# least (it is CPU time, not wall time); the load average is printed with it.
#
# `retrace replay --token-ids off` asks for the same bytes the peer does; `--token-ids auto`
# (logprobs on, the default against serve) is measured too, as the client's cost when it does what
# it is for. replay stores every exchange; the peer keeps text and timestamps in memory only.
#
# Usage: bench/client_peer.sh [path/to/retrace]
# Environment: REQUESTS (per client per round, default 2000), CONCURRENCY (64), ROUNDS (3),
# TOKENS (256 per answer), PIN=1 (server on CPU 0, clients on CPU 1).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RETRACE=${1:-$ROOT/build/release/retrace}
. "$ROOT/bench/lib.sh"
bench_workdir client-peer
REQUESTS=${REQUESTS:-2000}
CONCURRENCY=${CONCURRENCY:-64}
ROUNDS=${ROUNDS:-3}
TOKENS=${TOKENS:-256}
SERVER_PIN=(); CLIENT_PIN=()
if [[ "${PIN:-0}" == 1 ]]; then SERVER_PIN=(taskset -c 0); CLIENT_PIN=(taskset -c 1); fi
/usr/bin/python3 -c 'import aiohttp' 2>/dev/null ||
  { echo "bench/client_peer.sh: needs python3-aiohttp (scripts/deps.sh --bench installs it)" >&2; exit 2; }

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(uname -sr)"
echo "retrace: $RETRACE ($("$RETRACE" -V | head -1))"
echo "requests $REQUESTS × $TOKENS tokens, concurrency $CONCURRENCY, $ROUNDS rounds, pinned: ${PIN:-0}"

"${SERVER_PIN[@]}" "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off >"$WORK/serve.out" 2>"$WORK/serve.err" &
PIDS+=($!)
URL=$(url_of serve)
BODY="{\"model\":\"retrace-sim\",\"prompt\":\"Tell a long story.\",\"max_tokens\":$TOKENS,\"temperature\":0,\"stream\":true,\"ignore_eos\":true}"
python3 - "$WORK/stream.jsonl" "$BODY" <<'EOF'
import json, sys
with open(sys.argv[1], "w") as out:
    out.write(json.dumps({"request": json.loads(sys.argv[2])}) + "\n")
EOF
"$RETRACE" import "$WORK/stream.jsonl" --endpoint completions --out "$WORK/stream.rtrace" >/dev/null 2>&1

median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
per_token_us() { awk -v c="$1" -v t="$2" 'BEGIN {printf "%.3f", c * 1e6 / t}'; }

replay_off=(); replay_auto=(); peer=()
for round in $(seq 1 "$ROUNDS"); do
  for mode in off auto; do
    cpu=$(command_cpu "$WORK/replay-$mode.out" "${CLIENT_PIN[@]}" "$RETRACE" replay "$WORK/stream.rtrace" \
      --target "$URL" -c "$CONCURRENCY" --requests "$REQUESTS" --token-ids "$mode" --force \
      --out "$WORK/run-$mode.rtrace" --json)
    tokens=$(jq -r .output_tokens "$WORK/replay-$mode.out" | tail -1)
    [[ "$(jq -r .completed "$WORK/replay-$mode.out" | tail -1)" == "$REQUESTS" ]] ||
      { cat "$WORK/replay-$mode.out" >&2; echo "replay did not complete every request" >&2; exit 1; }
    us=$(per_token_us "$cpu" "$tokens")
    if [[ $mode == off ]]; then replay_off+=("$us"); else replay_auto+=("$us"); fi
  done
  line=$("${CLIENT_PIN[@]}" /usr/bin/python3 "$ROOT/bench/peer_client.py" "$URL/v1/completions" "$BODY" \
    "$REQUESTS" "$CONCURRENCY")
  [[ "$(jq -r .completed <<<"$line")" == "$REQUESTS" ]] || { echo "peer: $line" >&2; exit 1; }
  us=$(per_token_us "$(jq -r .cpu_s <<<"$line")" "$(jq -r .tokens <<<"$line")")
  peer+=("$us")
  echo "round $round (load $(cut -d' ' -f1 /proc/loadavg)): µs CPU per token — replay --token-ids off" \
       "${replay_off[-1]}, replay --token-ids auto ${replay_auto[-1]}, peer ${peer[-1]}"
done
off=$(printf '%s\n' "${replay_off[@]}" | median)
auto=$(printf '%s\n' "${replay_auto[@]}" | median)
peer_median=$(printf '%s\n' "${peer[@]}" | median)
echo "median µs CPU per token: replay --token-ids off $off, --token-ids auto (logprobs) $auto," \
     "peer (aiohttp, stores nothing) $peer_median"
echo "peer ÷ replay: $(awk -v p="$peer_median" -v r="$off" 'BEGIN {printf "%.2f", p / r}') (same bytes)," \
     "$(awk -v p="$peer_median" -v r="$auto" 'BEGIN {printf "%.2f", p / r}') (replay also asking for logprobs)"
