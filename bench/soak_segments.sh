#!/usr/bin/env bash
# Soak of segmented recording (issue 40): `retrace replay -c 64` through `retrace record` into
# `retrace serve`, in alternating phases of equal length: (A) record --out DIR/ --rotate-every
# ROTATE --max-disk MAX_DISK, (B) record into one file. Each phase starts its own record and
# replay; record's VmRSS, open descriptors, CPU (utime + stime from /proc/PID/stat) and, in A, the
# bytes in DIR are sampled every INTERVAL seconds. Per phase: exchanges recorded, record's CPU per
# exchange, RSS warm/end/max, segments opened/deleted (record's stderr summary) and the disk used
# at the end against the budget. The machine is shared: only the ratio rotated / unrotated of CPU
# per exchange, phases alternated, means something; the load average is printed beside it.
#
# Usage: bench/soak_segments.sh [PHASES=4] [PHASE_SECONDS=150] [INTERVAL_SECONDS=5] [RETRACE]
# Environment: CONCURRENCY (64), ROTATE (10s), MAX_DISK (bytes, 4194304 = 4 MiB: about
# four 10 s segments at the ~75 exchanges/s of this machine loaded).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PHASES=${1:-4}
PHASE=${2:-150}
INTERVAL=${3:-5}
RETRACE=${4:-$ROOT/build/release/retrace}
CONCURRENCY=${CONCURRENCY:-64}
ROTATE=${ROTATE:-10s}
MAX_DISK=${MAX_DISK:-4194304}
. "$ROOT/bench/lib.sh"
bench_workdir soak-segments
TICK_MS=$(( 1000 / $(getconf CLK_TCK) ))

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
dir_bytes() { du -sb "$1" 2>/dev/null | awk '{print $1}'; }
load() { awk '{print $1, $2, $3}' /proc/loadavg; }

soak_workload_and_serve  # $WORK/workload.rtrace, serve_url

echo "soak of segments: $PHASES phases of ${PHASE}s alternating A (--out DIR/ --rotate-every $ROTATE" \
  "--max-disk $MAX_DISK) and B (one file), replay -c $CONCURRENCY -> record -> serve; sampled every ${INTERVAL}s"
echo "started $(date -u '+%Y-%m-%d %H:%M:%S') UTC, load average $(load)"
: >"$WORK/summary"
for p in $(seq 1 "$PHASES"); do
  if (( p % 2 == 1 )); then
    mode=A; out="$WORK/seg$p/"
    start record "$RETRACE" record --upstream "$serve_url" --out "$out" --rotate-every "$ROTATE" \
      --max-disk "$MAX_DISK" --listen 127.0.0.1:0 --no-server-info
  else
    mode=B; out="$WORK/one$p.rtrace"
    start record "$RETRACE" record --upstream "$serve_url" --out "$out" --listen 127.0.0.1:0 --no-server-info
  fi
  record_url=$(url_of record)
  mkdir -p "$WORK/runs$p"
  start replay "$RETRACE" replay "$WORK/workload.rtrace" --target "$record_url" -c "$CONCURRENCY" \
    --repeat 100000 --out "$WORK/runs$p/run.rtrace"
  echo
  echo "phase $p ($mode), load average $(load) at its start"
  echo "| t (s) | record RSS (KiB) | record fds | record CPU (ms) | disk (bytes) |"
  echo "|---:|---:|---:|---:|---:|"
  started=$(date +%s)
  : >"$WORK/samples$p"
  while :; do
    now=$(( $(date +%s) - started ))
    kill -0 "$replay_PID" 2>/dev/null || { echo "replay ended early:" >&2; tail -5 "$WORK/replay.err" >&2; exit 1; }
    disk=$(dir_bytes "$out")
    row="$now $(rss_kib "$record_PID") $(fds "$record_PID") $(( $(cpu_ticks "$record_PID") * TICK_MS )) $disk"
    echo "$row" >>"$WORK/samples$p"
    echo "| ${row// / | } |"
    (( now >= PHASE )) && break
    sleep "$INTERVAL"  # a sampling period, not a wait for an event
  done
  kill -INT "$replay_PID"
  wait "$replay_PID" || true
  cpu_ms=$(( $(cpu_ticks "$record_PID") * TICK_MS ))  # before the drain and close of SIGTERM
  kill -TERM "$record_PID"
  wait "$record_PID" || true
  line=$(grep -m1 -E 'recorded [0-9]+ exchange' "$WORK/record.err")
  echo "record: ${line#retrace record: }"
  exchanges=$(sed -E 's/.*recorded ([0-9]+) exchange.*/\1/' <<<"$line")
  opened=$(grep -oE '[0-9]+ segment\(s\) opened' <<<"$line" | awk '{print $1}' || true)
  deleted=$(grep -oE 'opened, [0-9]+ deleted' <<<"$line" | awk '{print $2}' || true)
  end_disk=$(dir_bytes "$out")
  # RSS: warm = the first sample after traffic started (the second), end = the last, max = all
  read -r warm end max maxdisk < <(awk 'NR == 2 {w = $2} {e = $2; if ($2 > m) m = $2; if ($5 > d) d = $5}
                                     END {print w, e, m, d}' "$WORK/samples$p")
  echo "$p $mode $exchanges $cpu_ms $warm $end $max ${opened:--} ${deleted:--} $end_disk $maxdisk $(load | tr ' ' '/')" \
    >>"$WORK/summary"
  rm -rf "$WORK/runs$p" "$out"
done

echo
echo "ended $(date -u '+%Y-%m-%d %H:%M:%S') UTC, load average $(load); budget (A) $MAX_DISK bytes"
echo "| phase | mode | exchanges | record CPU (ms) | CPU per exchange (us) | RSS warm / end / max (KiB) | segments opened / deleted | disk at end / max sampled (bytes) | load at end |"
echo "|---:|---|---:|---:|---:|---|---|---|---|"
awk '{printf "| %s | %s | %s | %s | %.0f | %s / %s / %s | %s / %s | %s / %s | %s |\n",
      $1, $2, $3, $4, $4 * 1000 / $3, $5, $6, $7, $8, $9, $10, $11, $12}' "$WORK/summary"
awk '{cpu[$2] += $4; ex[$2] += $3}
     END {if (!ex["A"] || !ex["B"]) exit; a = cpu["A"] / ex["A"]; b = cpu["B"] / ex["B"];
          printf "CPU per exchange: rotated %.1f us, one file %.1f us, rotated / one file = %.3f\n",
                 a * 1000, b * 1000, a / b}' "$WORK/summary"
