#!/usr/bin/env bash
# One answer of many parts (issue 46 item 1): `replay` of one /v1/embeddings request whose answer
# holds N entries without "index", against a Python upstream on loopback, for each N; wall
# seconds and peak RSS of the build under test and of BASELINE (a second binary, e.g. main's, in
# the same run). Before the O(1) part lookup a response of N parts cost N^2/2 compares.
#   bench/many_parts.sh RETRACE [BASELINE] [N...]      (default N: 10000 30000 100000)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
retrace=$(realpath "$1"); baseline=${2:+$(realpath "$2")}; shift $(( $# < 2 ? $# : 2 ))
sizes=("${@:-10000 30000 100000}"); read -r -a sizes <<<"${sizes[*]}"
bench_workdir many_parts

echo '{"request": {"model": "m", "input": ["x"]}}' >"$WORK/in.jsonl"
"$retrace" import "$WORK/in.jsonl" --endpoint embeddings --out "$WORK/in.rtrace" 2>/dev/null

printf '%-8s %-10s %10s %12s\n' N binary wall_s peak_MiB
for n in "${sizes[@]}"; do
  python3 "$(dirname "$0")/../tests/production/parts_upstream.py" "$n" 0 >"$WORK/up.out" 2>"$WORK/up.err" &
  PIDS+=($!)
  url=$(url_of up)
  for which in new baseline; do
    binary=$retrace; [[ $which == baseline ]] && binary=$baseline
    [[ -n "$binary" ]] || continue
    read -r wall rss < <(gnu_time "$binary" replay "$WORK/in.rtrace" --target "$url" --out "$WORK/run-$which.rtrace" --force -c 1)
    printf '%-8s %-10s %10s %12s\n' "$n" "$which" "$wall" "$((rss / 1024))"
  done
  kill "${PIDS[-1]}"; wait "${PIDS[-1]}" 2>/dev/null || true; unset 'PIDS[-1]'
done
