#!/usr/bin/env bash
# Peak RSS and CPU of the sharded-replay steps as the run grows (10k, 100k, 1M exchanges by
# default): `replay --shard 0/4` up to its preflight (it loads the input trace whole before
# selecting), `merge` of four shard runs, `stats` and `diff` of the merged run, and the floor, `zstd -dc` of
# the four shards, in the same session. Traces come from bench/shard_bench.cpp.
#   bench/shards.sh BUILD_DIR [SIZES...]
set -euo pipefail
BUILD=${1:?usage: bench/shards.sh BUILD_DIR [SIZES...]}
shift
[[ $# -gt 0 ]] && SIZES=("$@") || SIZES=(10000 100000 1000000)
DIR=$(mktemp -d "${TMPDIR:-/tmp}/retrace-shard-bench.XXXXXX")
trap 'rm -rf "$DIR"' EXIT

measure() {  # label, command...: CPU seconds (user+sys), wall seconds, peak RSS (KiB)
  local label=$1; shift
  /usr/bin/time -f "%U %S %e %M" -o "$DIR/time" "$@" >/dev/null 2>"$DIR/err" || true
  read -r user sys wall rss < <(tail -n 1 "$DIR/time")
  printf '%-9s %-34s cpu %7.2f s  wall %7.2f s  peak RSS %8d KiB\n' "$n" "$label" \
    "$(echo "$user + $sys" | bc)" "$wall" "$rss"
}

for n in "${SIZES[@]}"; do
  rm -f "$DIR"/*.rtrace
  "$BUILD/bench/shard_bench" "$DIR" "$n" 16 >/dev/null
  printf '%-9s trace %s, shards %s bytes\n' "$n" "$(stat -c %s "$DIR/trace.rtrace")" \
    "$(cat "$DIR"/shard?.rtrace | wc -c)"
  measure "zstd -dc of the 4 shards (floor)" bash -c "cat '$DIR'/shard?.rtrace | zstd -dc >/dev/null"
  measure "merge" "$BUILD/retrace" merge "$DIR"/shard{0,1,2,3}.rtrace -o "$DIR/merged.rtrace" --force
  grep -q . "$DIR/err" && head -3 "$DIR/err"
  measure "stats merged" "$BUILD/retrace" stats "$DIR/merged.rtrace"
  cp "$DIR/merged.rtrace" "$DIR/copy.rtrace"
  measure "diff merged, a copy of it" "$BUILD/retrace" diff "$DIR/merged.rtrace" "$DIR/copy.rtrace"
  measure "replay --shard 0/4 (load, to preflight)" "$BUILD/retrace" replay "$DIR/trace.rtrace" \
    --target http://127.0.0.1:9 --shard 0/4 -c 8 --out "$DIR/never.rtrace" --force
done
