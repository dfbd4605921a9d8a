#!/usr/bin/env bash
# Times `retrace diff` on two 100,000-exchange traces (128 tokens each), identical and 1% divergent,
# against the floor: `zstd -dc` of the same two files. Peak RSS from /usr/bin/time -v.
#   bench/diff.sh BUILD_DIR [EXCHANGES] [TOKENS]
set -euo pipefail
BUILD=${1:?usage: bench/diff.sh BUILD_DIR [EXCHANGES] [TOKENS]}
EXCHANGES=${2:-100000}
TOKENS=${3:-128}
DIR=$(mktemp -d "${TMPDIR:-/tmp}/retrace-diff-bench.XXXXXX")
trap 'rm -rf "$DIR"' EXIT

"$BUILD/bench/diff_bench" "$DIR" "$EXCHANGES" "$TOKENS" 10
ls -l "$DIR"/*.rtrace

measure() {  # label, command...: wall seconds and peak RSS (KiB) from GNU time
  local label=$1; shift
  /usr/bin/time -f "%e %M" -o "$DIR/time" "$@" >/dev/null 2>"$DIR/err" || [[ $? == 1 ]]
  # GNU time puts "Command exited with non-zero status 1" first when diff reports differences.
  read -r seconds rss < <(tail -n 1 "$DIR/time")
  printf '%-40s %8s s  %8s KiB peak RSS\n' "$label" "$seconds" "$rss"
  echo "$seconds"  >"$DIR/last"
}

for candidate in identical divergent; do
  for round in 1 2 3; do
    measure "zstd -dc baseline + $candidate (floor)" \
      bash -c "zstd -dc '$DIR/baseline.rtrace' >/dev/null && zstd -dc '$DIR/$candidate.rtrace' >/dev/null"
    floor=$(cat "$DIR/last")
    measure "retrace diff baseline $candidate" "$BUILD/retrace" diff "$DIR/baseline.rtrace" "$DIR/$candidate.rtrace"
    diff=$(cat "$DIR/last")
    awk -v d="$diff" -v f="$floor" 'BEGIN { printf "  ratio diff/floor: %.2f\n", (f > 0 ? d / f : 0) }'
  done
done
