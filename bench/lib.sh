# Sourced by the bench scripts that start processes: `bench_workdir NAME` makes $WORK (a fresh
# temporary folder) and, on exit, stops every process whose pid is in PIDS and removes $WORK.
PIDS=()
bench_cleanup() {
  local pid
  for pid in "${PIDS[@]+"${PIDS[@]}"}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]+"${PIDS[@]}"}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
bench_workdir() {
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/retrace-$1.XXXXXX")
  trap bench_cleanup EXIT
}
