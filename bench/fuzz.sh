#!/usr/bin/env bash
# The fuzz targets for a long run: HOURS (default 1) split evenly across the targets, the corpus
# kept in build/fuzz/corpus for the next run. Results (executions, coverage) go to bench/RESULTS.md
# by hand, with the command.
# Usage: bench/fuzz.sh [HOURS]
set -euo pipefail
cd "$(dirname "$0")/.."
hours=${1:-1}
mapfile -t targets < <(scripts/fuzz.sh --list)  # every target, not a list of its own
per_target=$(python3 -c "print(int($hours * 3600 / ${#targets[@]}))")
exec scripts/fuzz.sh "$per_target" "${targets[@]}"
