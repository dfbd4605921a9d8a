#!/usr/bin/env bash
# What scraping record's /metrics at 10 Hz costs record (issue 40): one record (with
# --admin-listen) in front of `retrace serve`, the same replay sent through it in alternating
# phases with and without a scraper asking GET /metrics ten times a second; record's CPU (utime +
# stime from /proc) over each phase, per exchange. The machine is shared: read the ratio of the
# medians, and the spread of the rounds beside it. Then the scraper's cost alone: record idle for
# IDLE seconds with and without it (its CPU then is the scrapes' and the once-a-second upstream
# check's), the absolute figure to set beside record's CPU under load.
# Usage: bench/record_scrape.sh [RETRACE] [ROUNDS] [REQUESTS]
set -euo pipefail
RETRACE=${1:-build/release/retrace}
ROUNDS=${2:-5}
REQUESTS=${3:-20000}
IDLE=${4:-20}
. "$(dirname "$0")/lib.sh"
bench_workdir record-scrape

"$RETRACE" serve --listen 127.0.0.1:0 --latency-model off >"$WORK/serve.out" 2>"$WORK/serve.err" &
PIDS+=($!)
SERVE=$(url_of serve)
"$RETRACE" record --upstream "$SERVE" --out "$WORK/rec.rtrace" --listen 127.0.0.1:0 --no-server-info \
  --admin-listen 127.0.0.1:0 >"$WORK/record.out" 2>"$WORK/record.err" &
RECORD_PID=$!
PIDS+=($RECORD_PID)
for i in $(seq 1 100); do grep -q "admin on" "$WORK/record.out" && break; sleep 0.1; done
ADMIN=$(grep -m1 -oE 'admin on http://[^ ]+' "$WORK/record.out" | sed 's/^admin on //')
PROXY=$(grep -m1 -oE 'listening on http://[^ ]+' "$WORK/record.out" | sed 's/^listening on //')

for i in $(seq 1 "$REQUESTS"); do
  printf '{"request":{"model":"retrace-sim","prompt":"Question %d: what now?","max_tokens":16,"temperature":0,"stream":true}}\n' "$i"
done >"$WORK/prompts.jsonl"
"$RETRACE" import "$WORK/prompts.jsonl" --out "$WORK/source.rtrace" --endpoint completions >/dev/null

cpu_ticks() { awk '{print $14 + $15}' "/proc/$RECORD_PID/stat"; }
start_scraper() {  # sets SCRAPER; the scrape count goes to $WORK/scrapes when it is stopped
  python3 - "$ADMIN/metrics" >"$WORK/scrapes" <<'PY' &
import sys, time, urllib.request, signal
n = 0
def done(*_):
    print(n); sys.stdout.flush(); sys.exit(0)
signal.signal(signal.SIGTERM, done)
while True:
    urllib.request.urlopen(sys.argv[1], timeout=5).read(); n += 1
    time.sleep(0.1)
PY
  SCRAPER=$!
}
idle() {  # SCRAPE(0|1): record's CPU ms over IDLE seconds without traffic, and the scrapes made
  local before after scrapes=0
  [[ $1 == 1 ]] && start_scraper
  before=$(cpu_ticks)
  sleep "$IDLE"
  after=$(cpu_ticks)
  if [[ $1 == 1 ]]; then kill "$SCRAPER"; wait "$SCRAPER" || true; scrapes=$(cat "$WORK/scrapes"); fi
  echo "$(( (after - before) * 10 )) $scrapes"
}
phase() {  # SCRAPE(0|1): prints record's CPU ms per 1,000 exchanges, and the scrapes made
  local before after scrapes=0
  [[ $1 == 1 ]] && start_scraper
  before=$(cpu_ticks)
  "$RETRACE" replay "$WORK/source.rtrace" --target "$PROXY" -c 16 --out "$WORK/run.rtrace" --force >/dev/null 2>&1
  after=$(cpu_ticks)
  if [[ $1 == 1 ]]; then kill "$SCRAPER"; wait "$SCRAPER" || true; scrapes=$(cat "$WORK/scrapes"); fi
  echo "$(( (after - before) * 10 * 1000 / REQUESTS )) $scrapes"
}
phase 0 >/dev/null  # warm up
read -r idle_off _ < <(idle 0)
read -r idle_on idle_scrapes < <(idle 1)
echo "record idle for $IDLE s: ${idle_off} ms CPU without a scraper, ${idle_on} ms with one ($idle_scrapes scrapes)"
echo "round  off_ms_per_1k  on_ms_per_1k  scrapes"
: >"$WORK/rounds"
for r in $(seq 1 "$ROUNDS"); do
  read -r off _ < <(phase 0)
  read -r on scrapes < <(phase 1)
  echo "$r  $off  $on  $scrapes"
done | tee -a "$WORK/rounds"
python3 - "$WORK/rounds" <<'PY'
import statistics, sys
rows = [list(map(int, l.split())) for l in open(sys.argv[1]) if l.strip()]
off = statistics.median(r[1] for r in rows); on = statistics.median(r[2] for r in rows)
print(f"median CPU per 1k exchanges: off {off} ms, on {on} ms, on/off {on / off:.3f}")
PY
