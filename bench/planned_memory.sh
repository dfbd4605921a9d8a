#!/usr/bin/env bash
# Peak memory and time to the first request of the runs that are planned before they send
# (issue 28 item 7): --sessions over a ShareGPT-shaped trace, a 60 s window of a BurstGPT-shaped
# trace on its recorded clock, and a whole Mooncake-shaped trace on its recorded clock. Each trace
# is generated here in its published shape and imported with `retrace import`, as
# tests/production does. Each run is `--duration 1ms`: it plans, runs the preflight, sends what
# its first millisecond holds and ends, so its wall time is the time to the first request and its
# peak RSS the plan's (with -c 32 for comparison: a streamed run). Server: `retrace serve
# --latency-model off` on loopback; peak RSS and wall time from GNU time.
#
# Usage: bench/planned_memory.sh [RETRACE_BINARY[:BINARY...]] [SHAREGPT_CONVERSATIONS] [BURSTGPT_ROWS]
#        [MOONCAKE_ROWS]   (a Markdown table for each binary, over the same traces; bench/RESULTS.md
#        keeps them)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BINARIES=${1:-$ROOT/build/release/retrace}
TOOL=${BINARIES##*:}  # the last binary serves, imports and inspects
CONVERSATIONS=${2:-12000}
BURST_ROWS=${3:-50000}
MOONCAKE_ROWS=${4:-12000}
. "$ROOT/bench/lib.sh"
bench_workdir planned

start_memory_serve "$TOOL"

python3 - "$WORK" "$CONVERSATIONS" "$BURST_ROWS" "$MOONCAKE_ROWS" <<'PY'
import json, random, sys
work, conversations, burst_rows, mooncake_rows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rng = random.Random(287)
words = "the of and to a in is it you that he was for on are with as his they be at one have".split()
def text(n):
    return " ".join(rng.choice(words) for _ in range(n))
# ShareGPT: conversations of 2-6 human turns of ~60 words, answers of ~80 words.
with open(work + "/sharegpt.json", "w") as f:
    f.write("[")
    for c in range(conversations):
        turns = []
        for k in range(rng.randint(2, 6)):
            turns.append({"from": "human", "value": text(60)})
            turns.append({"from": "gpt", "value": text(80)})
        f.write(("," if c else "") + json.dumps({"id": "c%d" % c, "conversations": turns}))
    f.write("]")
# BurstGPT: ~3.3 rows a second, conversation logs in sessions.
with open(work + "/burstgpt.csv", "w") as f:
    f.write("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type,Session ID,Elapsed time\n")
    t = 0.0
    for i in range(burst_rows):
        t += rng.expovariate(3.3)
        req, resp = rng.randint(50, 1500), rng.randint(10, 400)
        session = "s%d" % rng.randint(0, burst_rows // 8) if rng.random() < 0.5 else ""
        f.write("%.3f,ChatGPT,%d,%d,%d,Conversation log,%s,1.0\n" % (t, req, resp, req + resp, session))
# Mooncake: rows a few ms apart, long prompts (hash blocks of 512 tokens).
with open(work + "/mooncake.jsonl", "w") as f:
    t = 0
    for i in range(mooncake_rows):
        t += rng.randint(0, 300)
        n = rng.randint(4, 30)
        f.write(json.dumps({"timestamp": t, "input_length": n * 512, "output_length": rng.randint(1, 400),
                            "hash_ids": [rng.randint(0, 20000) for _ in range(n)]}) + "\n")
PY
"$TOOL" import "$WORK/sharegpt.json" --from sharegpt --out "$WORK/sharegpt.rtrace" 2>/dev/null
"$TOOL" import "$WORK/burstgpt.csv" --from burstgpt --out "$WORK/burstgpt.rtrace" 2>/dev/null
"$TOOL" import "$WORK/mooncake.jsonl" --from mooncake --out "$WORK/mooncake.rtrace" 2>/dev/null

exchanges() { "$TOOL" inspect "$1" --json | jq -r '.counts.exchanges'; }

measure() {  # NAME TRACE ARGS...: wall seconds and peak RSS (MiB)
  local name=$1 trace=$2
  shift 2
  local timed seconds kib
  timed=$(gnu_time "$RETRACE" replay "$trace" --target "$URL" --out "$WORK/run.rtrace" --force \
    --duration 1ms "$@")
  read -r seconds kib <<<"$timed"
  local mb
  mb=$(awk -v b="$(stat -c %s "$trace")" 'BEGIN {printf "%.0f", b / 1048576}')
  echo "| $name | $(exchanges "$trace") | $mb | $seconds | $((kib / 1024)) |"
}

IFS=: read -r -a binaries <<<"$BINARIES"
for RETRACE in "${binaries[@]}"; do
  echo "retrace: $RETRACE; $(nproc) cores; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  echo "| run | exchanges | trace (MiB) | to first request (s) | peak RSS (MiB) |"
  echo "|---|---:|---:|---:|---:|"
  measure "ShareGPT -c 32 (streamed)" "$WORK/sharegpt.rtrace" -c 32
  measure "ShareGPT --sessions -c 32" "$WORK/sharegpt.rtrace" -c 32 --sessions
  measure "BurstGPT 60 s window, recorded" "$WORK/burstgpt.rtrace" --timing recorded --window-from 600s --window-to 660s
  measure "Mooncake whole, recorded" "$WORK/mooncake.rtrace" --timing recorded
  echo
done
