#!/usr/bin/env bash
# record's memory and CPU under malloc policies (issue 44's production hygiene): `retrace record
# --threads THREADS` in front of `retrace serve --latency-model off`, driven by `retrace replay`.
# Two workloads a configuration, each through a fresh record:
#   long:  PASSES passes of C streams of TOKENS tokens with logprobs (--token-ids auto; default
#          3 x 64 x 16,000), all in flight at once. After each pass, once record's /metrics says
#          every exchange is in the trace: record's RSS (steady: what a pass leaves resident) and,
#          at the end, its VmHWM (peak).
#   short: SHORT streamed answers of 256 tokens with logprobs at -c 64 (replay (b)'s shape):
#          record's user + system CPU a token, where its threads' allocations may contend.
# Configurations, alternated round by round: `before` (BEFORE=OTHER_BINARY, when given),
# `before+NAME` for each NAME=VALUE of TUNABLES (BEFORE, or RETRACE when BEFORE is unset, under
# GLIBC_TUNABLES=VALUE; TUNABLES=1 is replay's policy, one arena and a fixed 1 MiB mmap threshold,
# as `before+policy`) and `after` (RETRACE).
#
# Usage: [BEFORE=BIN] [TUNABLES=1|"NAME=VALUE ..."] [THREADS=2] [PASSES=3] [C=64] [TOKENS=16000]
#        [SHORT=1500] bench/record_memory.sh [RETRACE_BINARY] [ROUNDS=2]
#   (PASSES=0: the short workload alone, for CPU)
#   e.g. TUNABLES="mmap=glibc.malloc.mmap_threshold=1048576 arena=glibc.malloc.arena_max=1"
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RETRACE=${1:-$ROOT/build/release/retrace}
ROUNDS=${2:-2}
THREADS=${THREADS:-2}
PASSES=${PASSES:-3}
C=${C:-64}
TOKENS=${TOKENS:-16000}
SHORT=${SHORT:-1500}
POLICY_TUNABLES=glibc.malloc.arena_max=1:glibc.malloc.mmap_threshold=1048576
. "$ROOT/bench/lib.sh"
bench_workdir record-memory

CONFIGS=()
declare -A BIN ENVS
if [[ -n "${BEFORE:-}" ]]; then CONFIGS+=(before); BIN[before]=$BEFORE; ENVS[before]=""; fi
# TUNABLES="NAME=VALUE ...": more configurations, BEFORE (or RETRACE) under GLIBC_TUNABLES=VALUE;
# TUNABLES=1 is "policy=" replay's policy.
[[ "${TUNABLES:-}" != 1 ]] || TUNABLES="policy=$POLICY_TUNABLES"
for variant in ${TUNABLES:-}; do
  name=before+${variant%%=*}
  CONFIGS+=("$name"); BIN[$name]=${BEFORE:-$RETRACE}; ENVS[$name]=${variant#*=}
done
CONFIGS+=(after); BIN[after]=$RETRACE; ENVS[after]=""

"$RETRACE" serve --listen 127.0.0.1:0 --latency-model off --max-model-len 65536 \
  --max-batch "$(( C > 64 ? C : 64 ))" >"$WORK/serve.out" 2>"$WORK/serve.err" &
PIDS+=($!)
SIM=$(url_of serve)

if (( PASSES > 0 )); then
  streamed_chat_requests "$WORK/long.jsonl" "$C" "$TOKENS"
  "$RETRACE" import "$WORK/long.jsonl" --out "$WORK/long.rtrace" >/dev/null 2>&1
fi
streamed_chat_requests "$WORK/short.jsonl" "$SHORT" 256
"$RETRACE" import "$WORK/short.jsonl" --out "$WORK/short.rtrace" >/dev/null 2>&1

start_record() {  # CONFIG : a fresh record; sets REC_PID, PROXY, ADMIN
  rm -f "$WORK/record.out" "$WORK/rec.rtrace"
  env ${ENVS[$1]:+GLIBC_TUNABLES=${ENVS[$1]}} "${BIN[$1]}" record --upstream "$SIM" \
    --out "$WORK/rec.rtrace" --listen 127.0.0.1:0 --admin-listen 127.0.0.1:0 \
    --threads "$THREADS" >"$WORK/record.out" 2>"$WORK/record.err" &
  REC_PID=$!
  PIDS+=("$REC_PID")
  url_of record >/dev/null
  local i
  for i in $(seq 1 100); do grep -q "admin on" "$WORK/record.out" && break; sleep 0.1; done
  PROXY=$(grep -m1 -oE 'listening on http://[^ ]+' "$WORK/record.out" | sed 's/^listening on //')
  ADMIN=$(grep -m1 -oE 'admin on http://[^ ]+' "$WORK/record.out" | sed 's/^admin on //')
}
stop_record() { kill -INT "$REC_PID"; wait "$REC_PID" || true; }
recorded() {  # record's count of exchanges in the trace
  curl -s "$ADMIN/metrics" | awk '/^retrace_record_exchanges_total\{outcome="recorded"\}/ {print $2}'
}
wait_recorded() {  # COUNT : until record says COUNT exchanges are in the trace (bounded: 10 min)
  local i
  for i in $(seq 1 6000); do
    [[ "$(recorded)" == "$1" ]] && return 0
    sleep 0.1  # polling the count, the event waited for
  done
  echo "record never had $1 exchanges in its trace (has $(recorded))" >&2
  exit 1
}
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$1/stat"; }
status_kib() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }
replay_through() {  # TRACE ARGS...
  local trace=$1; shift
  "$RETRACE" replay "$trace" --target "$PROXY" --out "$WORK/run.rtrace" --force "$@" >/dev/null 2>"$WORK/replay.err" || {
    cat "$WORK/replay.err" >&2; exit 1; }
}

echo "record --threads $THREADS; long: $PASSES passes of $C x $TOKENS tokens (--token-ids auto); short: $SHORT x 256;" \
  "$(nproc) cores, load average at start $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| round | config | idle RSS (MiB) | RSS after each long pass (MiB) | peak VmHWM (MiB) | long: CPU µs/token | short: CPU µs/token | load |"
echo "|---:|---|---:|---|---:|---:|---:|---|"
for round in $(seq 1 "$ROUNDS"); do
  for config in "${CONFIGS[@]}"; do
    idle=0 peak=0 long_cpu=- after_passes=(-)
    if (( PASSES > 0 )); then  # PASSES=0: the short workload's CPU alone
      start_record "$config"
      idle=$(status_kib "$REC_PID" VmRSS)
      before=$(cpu_s "$REC_PID")
      after_passes=()
      for pass in $(seq 1 "$PASSES"); do
        replay_through "$WORK/long.rtrace" -c "$C" --token-ids auto
        wait_recorded $(( pass * C ))
        after_passes+=("$(( $(status_kib "$REC_PID" VmRSS) / 1024 ))")
      done
      long_cpu=$(awk -v a="$(cpu_s "$REC_PID")" -v b="$before" -v t="$(( PASSES * C * TOKENS ))" 'BEGIN {printf "%.2f", (a - b) * 1e6 / t}')
      peak=$(status_kib "$REC_PID" VmHWM)
      stop_record
    fi
    start_record "$config"
    before=$(cpu_s "$REC_PID")
    replay_through "$WORK/short.rtrace" -c 64 --token-ids auto
    wait_recorded "$SHORT"
    short_cpu=$(awk -v a="$(cpu_s "$REC_PID")" -v b="$before" -v t="$(( SHORT * 256 ))" 'BEGIN {printf "%.2f", (a - b) * 1e6 / t}')
    stop_record
    echo "| $round | $config | $(( idle / 1024 )) | ${after_passes[*]} | $(( peak / 1024 )) | $long_cpu | $short_cpu | $(cut -d' ' -f1 /proc/loadavg) |"
  done
done
