# Sourced by the bench scripts that start processes: `bench_workdir NAME` makes $WORK (a fresh
# temporary folder) and, on exit, stops every process whose pid is in PIDS and removes $WORK;
# `url_of NAME` waits for a process started with output in $WORK/NAME.out to say where it listens;
# `storing_us_per_token RETRACE TRACE [PIN...]` prints what decoding and storing cost per token;
# `free_port` a free loopback port, `wait_port PORT` until something listens there;
# `command_cpu OUT CMD...` runs CMD (its output to OUT) and prints the CPU seconds it used;
# `start_memory_serve RETRACE` the server the peak-RSS benches measure against (sets URL);
# `gnu_time CMD...` runs CMD under GNU time and prints "WALL_SECONDS PEAK_RSS_KIB";
# `story_requests FILE COUNT MAX_TOKENS` writes COUNT completions requests for `retrace import`;
# `streamed_story_requests FILE COUNT` COUNT copies of replay.sh (b)'s streamed 256-token completion;
# `streamed_chat_requests FILE COUNT MAX_TOKENS` COUNT streamed chat requests with distinct prompts;
# `reading_cpu RETRACE COMMAND TRACE` the CPU seconds of `stats`, `export` or `diff` (TRACE against
# itself) reading TRACE.
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
storing_us_per_token() {  # RETRACE TRACE [PIN...] : "TOKENS US", or nothing when not built
  # bench/record_trace_bench (-DRETRACE_BENCH=ON) next to RETRACE: each exchange of TRACE decoded
  # again and stored (Cap'n Proto, zstd level 1) as record's trace thread does, best of 3 passes,
  # on the core PIN gives. What a relay or client that also stored would add (issue 18).
  local bench line
  bench=$(dirname "$1")/bench/record_trace_bench
  [[ -x "$bench" && -s "$2" ]] || return 0
  line=$("${@:3}" "$bench" "$2" 3 | head -1)
  awk '{print $3}' <<<"$line" | tr '\n' ' '
  sed -E 's/.*: ([0-9.]+) us\/token.*/\1/' <<<"$line"
}

# start NAME CMD...: CMD in the background, its output in $WORK/NAME.out and .err, stopped by the
# cleanup; sets NAME_PID. rss_kib PID and fds PID: its resident memory and open descriptors.
start() {  # NAME CMD... : in the background; sets NAME_PID
  local name=$1; shift
  "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" &
  PIDS+=("$!")
  printf -v "${name}_PID" '%s' "$!"
}
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo -; }
fds() { ls "/proc/$1/fd" 2>/dev/null | wc -l; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() {
  local i
  for i in $(seq 1 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "nothing listens on port $1" >&2
  return 1
}

command_cpu() {  # OUT CMD... : CMD's output to OUT; prints its and its children's user + system CPU
  /usr/bin/python3 - "$@" <<'EOF'
import resource, subprocess, sys
with open(sys.argv[1], "w") as out:
    status = subprocess.run(sys.argv[2:], stdout=out, stderr=subprocess.STDOUT).returncode
if status != 0:
    sys.exit("command failed (%d): %s" % (status, " ".join(sys.argv[2:])))
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(round(usage.ru_utime + usage.ru_stime, 4))
EOF
}

start_memory_serve() {  # RETRACE : `retrace serve` on loopback, no latency model, room for prompts of
  # 700 KB and answers of 16k tokens; sets URL. Stopped at exit with the rest of PIDS.
  "$1" serve --listen 127.0.0.1:0 --latency-model off --max-model-len 1048576 --max-body 16000000 \
    >"$WORK/serve.out" 2>"$WORK/serve.err" &
  PIDS+=($!)
  URL=$(url_of serve)
}

gnu_time() {  # CMD... : runs CMD (stdout dropped, stderr to $WORK/cmd.err) under GNU time and
  # prints "WALL_SECONDS PEAK_RSS_KIB". Exit 1 (some requests failed) still measures; any other
  # failure prints CMD's stderr and fails (a caller's `x=$(gnu_time ...)` then ends under set -e).
  /usr/bin/time -f '%e %M' -o "$WORK/time.txt" "$@" >/dev/null 2>"$WORK/cmd.err" || [[ $? == 1 ]] || {
    cat "$WORK/cmd.err" >&2; exit 1; }
  cat "$WORK/time.txt"
}

soak_workload_and_serve() {  # the soaks' workload, $WORK/workload.rtrace (512 streamed 32-token
  # completions), and `retrace serve` on loopback at $serve_url (soak.sh, soak_segments.sh)
  for i in $(seq 1 512); do
    printf '{"request":{"model":"retrace-sim","prompt":"Soak request %d: tell a story about the sea.","max_tokens":32,"temperature":0,"stream":true}}\n' "$i"
  done >"$WORK/workload.jsonl"
  "$RETRACE" import "$WORK/workload.jsonl" --out "$WORK/workload.rtrace" --endpoint completions >/dev/null
  start serve "$RETRACE" serve --listen 127.0.0.1:0
  serve_url=$(url_of serve)
}

streamed_chat_requests() {  # FILE COUNT MAX_TOKENS : COUNT streamed chat requests, distinct prompts
  python3 - "$@" <<'PY'
import json, sys
out, count, max_tokens = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with open(out, "w") as f:
    for i in range(count):
        body = {"model": "retrace-sim", "messages": [{"role": "user", "content": "think about problem %d" % i}],
                "max_tokens": max_tokens, "ignore_eos": True, "temperature": 0, "stream": True}
        f.write(json.dumps({"request": body}) + "\n")
PY
}
streamed_story_requests() {  # FILE COUNT : COUNT copies of one streamed 256-token completion (ignore_eos), JSONL
  python3 - "$@" <<'PY'
import json, sys
body = {"model": "retrace-sim", "prompt": "Tell a long story.", "max_tokens": 256,
        "temperature": 0, "stream": True, "ignore_eos": True}
with open(sys.argv[1], "w") as out:
    for i in range(int(sys.argv[2])):
        out.write(json.dumps({"request": body}) + "\n")
PY
}
story_requests() {  # FILE COUNT MAX_TOKENS : COUNT greedy completions of MAX_TOKENS tokens (ignore_eos), JSONL
  python3 - "$@" <<'PY'
import json, sys
with open(sys.argv[1], "w") as out:
    for i in range(int(sys.argv[2])):
        out.write(json.dumps({"id": "r%d" % i, "request": {"prompt": "a story about the sea, part %d" % i,
                                                           "max_tokens": int(sys.argv[3]), "temperature": 0,
                                                           "ignore_eos": True}}) + "\n")
PY
}

reading_cpu() {  # RETRACE COMMAND TRACE : CPU seconds of `RETRACE stats|export TRACE` or `diff TRACE TRACE`
  case $2 in
    diff) command_cpu "$WORK/out" "$1" diff "$3" "$3" ;;
    *) command_cpu "$WORK/out" "$1" "$2" "$3" ;;
  esac
}
