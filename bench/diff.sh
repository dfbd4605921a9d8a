#!/usr/bin/env bash
# Times `retrace diff` on two 100,000-exchange traces (128 tokens each), identical and 1% divergent,
# against the floor: `zstd -dc` of the same two files. Wall and CPU (user+sys) seconds and peak RSS
# from GNU time, each ratio against the floor of the same round.
#   bench/diff.sh BUILD_DIR [EXCHANGES] [TOKENS]
#   ROUNDS=N (default 3) rounds per case; DIFF_BASELINE=BINARY also times a second retrace (an
#   older build) in every round, right after the first, for before/after figures from one run.
set -euo pipefail
BUILD=${1:?usage: bench/diff.sh BUILD_DIR [EXCHANGES] [TOKENS]}
EXCHANGES=${2:-100000}
TOKENS=${3:-128}
ROUNDS=${ROUNDS:-3}
DIR=$(mktemp -d "${TMPDIR:-/tmp}/retrace-diff-bench.XXXXXX")
trap 'rm -rf "$DIR"' EXIT

"$BUILD/bench/diff_bench" "$DIR" "$EXCHANGES" "$TOKENS" 10
ls -l "$DIR"/*.rtrace

measure() {  # label, command...: wall and CPU seconds and peak RSS (KiB) from GNU time
  local label=$1; shift
  /usr/bin/time -f "%e %U %S %M" -o "$DIR/time" "$@" >/dev/null 2>"$DIR/err" || [[ $? == 1 ]]
  # GNU time puts "Command exited with non-zero status 1" first when diff reports differences.
  read -r wall user sys rss < <(tail -n 1 "$DIR/time")
  cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')
  printf '%-44s wall %6s s  cpu %6s s  %8s KiB peak RSS\n' "$label" "$wall" "$cpu" "$rss"
  echo "$wall $cpu" >"$DIR/last"
}

ratio() {  # label: this measurement against the round's floor
  read -r wall cpu <"$DIR/last"
  awk -v w="$wall" -v c="$cpu" -v fw="$floor_wall" -v fc="$floor_cpu" -v l="$1" \
    'BEGIN { printf "  %-42s wall %.2f  cpu %.2f\n", l " / floor:", (fw > 0 ? w / fw : 0), (fc > 0 ? c / fc : 0) }'
}

for candidate in identical divergent; do
  for ((round = 1; round <= ROUNDS; round++)); do
    measure "zstd -dc baseline + $candidate (floor)" \
      bash -c "zstd -dc '$DIR/baseline.rtrace' >/dev/null && zstd -dc '$DIR/$candidate.rtrace' >/dev/null"
    read -r floor_wall floor_cpu <"$DIR/last"
    measure "retrace diff baseline $candidate" "$BUILD/retrace" diff "$DIR/baseline.rtrace" "$DIR/$candidate.rtrace"
    ratio "diff"
    if [[ -n ${DIFF_BASELINE:-} ]]; then
      measure "DIFF_BASELINE diff baseline $candidate" "$DIFF_BASELINE" diff "$DIR/baseline.rtrace" "$DIR/$candidate.rtrace"
      ratio "DIFF_BASELINE diff"
    fi
  done
done
