#!/usr/bin/env bash
# Wall time of `retrace demo` (full and --quick): the README promises under 90 s on 2 cores.
# Usage: bench/demo.sh [path/to/retrace]
set -euo pipefail
RETRACE=${1:-$(dirname "$0")/../build/release/retrace}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for mode in full quick; do
  flags=(); [[ $mode == quick ]] && flags=(--quick)
  start=$(date +%s.%N)
  "$RETRACE" demo "${flags[@]}" --dir "$work/$mode" >/dev/null 2>&1
  end=$(date +%s.%N)
  printf 'demo %-5s %6.1f s\n' "$mode" "$(echo "$end - $start" | bc)"
done
