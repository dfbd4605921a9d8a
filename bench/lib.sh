# Sourced by the bench scripts that start processes: `bench_workdir NAME` makes $WORK (a fresh
# temporary folder) and, on exit, stops every process whose pid is in PIDS and removes $WORK;
# `url_of NAME` waits for a process started with output in $WORK/NAME.out to say where it listens.
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
url_of() {  # NAME : waits for "listening on http://..." in $WORK/NAME.out and prints the URL
  local i
  for i in $(seq 1 300); do
    grep -m1 -oE 'http://[0-9.:]+' "$WORK/$1.out" 2>/dev/null && return 0
    sleep 0.1
  done
  cat "$WORK/$1.err" >&2
  return 1
}
