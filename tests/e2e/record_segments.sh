# record --out DIR/ --rotate-size: numbered segments, each a whole trace the stock tools read, none
# over its size by more than one exchange, ids going on across them; SIGHUP rotates; the directory
# is one trace to inspect, export, stats, diff, replay, report and merge — the same traffic recorded
# as one file (a second proxy behind the first) diffs identical to it; a segment deleted from the
# middle is named as a gap and the rest read.
. "$(dirname "$0")/lib.sh"

start_listening upstream "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off --max-model-len 200000
start_listening single "$RETRACE" record --upstream "$upstream_URL" --out "$WORK/single.rtrace" \
  --listen 127.0.0.1:0 --no-server-info
start_listening segs "$RETRACE" record --upstream "$single_URL" --out "$WORK/segs/" \
  --rotate-size 1MiB --listen 127.0.0.1:0 --no-server-info

# Prompts of 100 KB that do not compress much (random letters): 40 of them make 4 MB and more.
python3 - "$WORK" <<'PY'
import random, sys, json
random.seed(40)
for i in range(44):
    letters = random.choices("abcdefghijklmnopqrstuvwxyz", k=89600)
    words = " ".join("".join(letters[j:j + 7]) for j in range(0, len(letters), 7))
    body = {"model": "retrace-sim", "prompt": f"request {i}: {words}", "max_tokens": 32, "stream": i % 2 == 0}
    open(f"{sys.argv[1]}/body{i}.json", "w").write(json.dumps(body))
PY
send() {
  curl -sf "$segs_URL/v1/completions" -H 'Content-Type: application/json' -d @"$WORK/body$1.json" >/dev/null \
    || fail "request $1 through the proxies failed"
}
for i in $(seq 0 39); do send "$i"; done

# SIGHUP: the open segment closes and the next opens (waited for as the log line and the file).
last=$(ls "$WORK/segs" | sort | tail -1)
kill -HUP "$segs_PID"
wait_for_line "$WORK/segs.err" "(SIGHUP;" "$segs_PID"
next=$(printf '%06d.rtrace' $((10#${last%.rtrace} + 1)))
wait_until "the segment after SIGHUP, $next" test -f "$WORK/segs/$next"
for i in $(seq 40 43); do send "$i"; done
stop "$segs_PID" || fail "the segmenting proxy did not stop cleanly"
stop "$single_PID" || fail "the single-file proxy did not stop cleanly"
check_contains "$WORK/segs.err" "recorded 44 exchange(s)" "the summary counts every exchange"
check_contains "$WORK/segs.err" "segment(s) opened" "the summary counts segments"

count=$(ls "$WORK/segs" | wc -l)
[[ $count -ge 4 ]] || fail "expected at least 4 segments (3 by size, 1 by SIGHUP), got $count"
# Each segment a whole trace the stock tools read; none past 1 MiB by more than one exchange
# (a 100 KB prompt and its answer: at most 140,000 bytes on disk, compressed or not).
for file in "$WORK"/segs/*.rtrace; do
  zstd -dc "$file" | capnp decode "$ROOT/format/trace.capnp" Record >"$WORK/decoded.txt" \
    || fail "zstd -dc | capnp decode could not read $file"
  check_eq "$(grep -c '^( *header = ' "$WORK/decoded.txt")" 1 "$file: one header"
  size=$(stat -c %s "$file")
  [[ $size -le $((1048576 + 140000)) ]] || fail "$file is $size bytes: past --rotate-size by more than one exchange"
done
grep -q 'segment_set' "$WORK/decoded.txt" || fail "a segment's header does not name its set"

# The directory is one trace: ids 0..43 in order, every command reads it.
"$RETRACE" export "$WORK/segs" >"$WORK/segs.jsonl"
ids=$(json_ids() { node -e '
  const lines=require("fs").readFileSync(process.argv[1],"utf8").trim().split("\n").map(JSON.parse);
  console.log(lines.filter(l=>l.exchange).map(l=>l.exchange.id).join(","))' "$1"; }; json_ids "$WORK/segs.jsonl")
check_eq "$ids" "$(seq -s, 0 43)" "exchange ids across the segments"
"$RETRACE" inspect "$WORK/segs" >"$WORK/inspect.txt"
check_contains "$WORK/inspect.txt" "exchanges     44" "inspect of the directory counts every exchange"
check_contains "$WORK/inspect.txt" "000001.rtrace  whole" "inspect lists the segments"
"$RETRACE" inspect --json "$WORK/segs" >"$WORK/inspect.json"
check_eq "$(json "$WORK/inspect.json" 's.segments.length')" "$count" "inspect --json lists every segment"
"$RETRACE" stats "$WORK/segs" >"$WORK/stats.txt" || fail "stats of the directory"
"$RETRACE" cat "$WORK/segs" --id 43 >"$WORK/cat.txt" || fail "cat of the directory"

# The same traffic as one file: identical.
"$RETRACE" diff "$WORK/segs" "$WORK/single.rtrace" >"$WORK/diff.txt" \
  || { cat "$WORK/diff.txt" >&2; fail "diff of the directory against the same traffic as one file"; }
"$RETRACE" replay "$WORK/segs" --target "$upstream_URL" -c 4 --out "$WORK/replayed.rtrace" \
  >"$WORK/replay.txt" 2>&1 || { cat "$WORK/replay.txt" >&2; fail "replay of the directory"; }
check_eq "$("$RETRACE" export "$WORK/replayed.rtrace" | grep -c '"exchange"')" 44 "replayed exchanges"
"$RETRACE" report "$WORK/segs" --out "$WORK/report.html" >/dev/null || fail "report of the directory"
for shard in 0 1; do
  "$RETRACE" replay "$WORK/segs" --target "$upstream_URL" -c 2 --shard "$shard/2" \
    --out "$WORK/shard$shard.rtrace" >"$WORK/shard$shard.txt" 2>&1 \
    || { cat "$WORK/shard$shard.txt" >&2; fail "replay --shard $shard/2 of the directory"; }
done
"$RETRACE" merge "$WORK/shard0.rtrace" "$WORK/shard1.rtrace" --trace "$WORK/segs" \
  --out "$WORK/merged.rtrace" >"$WORK/merge.txt" || { cat "$WORK/merge.txt" >&2; fail "merge with --trace DIR"; }
check_contains "$WORK/merge.txt" "merged 44 exchanges from 2 shards" "the sharded replay of the directory merged whole"

# A segment deleted from the middle: named as a gap, the rest read.
second=$(ls "$WORK/segs" | sort | sed -n 2p)
in_second=$("$RETRACE" export "$WORK/segs/$second" | grep -c '"exchange"')
rm "$WORK/segs/$second"
"$RETRACE" export "$WORK/segs" >"$WORK/gap.jsonl" 2>"$WORK/gap.err" || fail "export of a set with a gap"
check_eq "$(grep -c '"exchange"' "$WORK/gap.jsonl")" $((44 - in_second)) "exchanges read around the gap"
check_contains "$WORK/gap.err" "missing" "export names the gap"
"$RETRACE" inspect "$WORK/segs" >"$WORK/gap-inspect.txt" 2>&1 || true
check_contains "$WORK/gap-inspect.txt" "$second  missing" "inspect names the missing segment"
echo "PASS record_segments"
