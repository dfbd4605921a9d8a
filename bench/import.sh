#!/usr/bin/env bash
# `retrace import` of a generated Mooncake-format trace: rows per second and peak memory (RSS),
# against python3's json.loads over the same lines as the floor (parsing only: no prompts built,
# nothing compressed or written).
# Usage: bench/import.sh [ROWS]   (default 1000000; RETRACE=path/to/retrace, default build/release)
# The rows: bursts (a third of the rows share the previous row's timestamp), input lengths 16..512
# tokens (one 512-token block; 1,000 shared prefixes), output lengths 1..256.
set -euo pipefail
cd "$(dirname "$0")/.."
rows=${1:-1000000}
retrace=${RETRACE:-build/release/retrace}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

python3 - "$dir/mooncake.jsonl" "$rows" <<'EOF'
import json, random, sys
random.seed(13)
t = 0
with open(sys.argv[1], "w") as out:
    for i in range(int(sys.argv[2])):
        if random.random() > 1 / 3:
            t += random.randint(1, 40)
        out.write(json.dumps({"timestamp": t, "input_length": random.randint(16, 512),
                              "output_length": random.randint(1, 256),
                              "hash_ids": [random.randint(0, 999)]}) + "\n")
EOF
size=$(stat -c %s "$dir/mooncake.jsonl")

measure() {  # measure NAME CMD...: wall seconds and peak RSS (MiB) from /usr/bin/time -v
  local name=$1; shift
  /usr/bin/time -v "$@" 2>"$dir/$name.time" >/dev/null || { cat "$dir/$name.time" >&2; exit 1; }
  local wall rss
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s}' "$dir/$name.time")
  rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.1f", $2 / 1024}' "$dir/$name.time")
  printf '%-28s %8.2f s  %10.0f rows/s  peak RSS %7s MiB\n' "$name" "$wall" "$(echo "$rows / $wall" | bc -l)" "$rss"
}

echo "$rows Mooncake rows, $((size / 1048576)) MiB of JSONL; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
measure "python3 json.loads (floor)" python3 -c 'import json, sys
for line in open(sys.argv[1]): json.loads(line)' "$dir/mooncake.jsonl"
measure "retrace import" nice -n 0 "$retrace" import "$dir/mooncake.jsonl" --out "$dir/out.rtrace"
echo "trace: $(($(stat -c %s "$dir/out.rtrace") / 1048576)) MiB"
