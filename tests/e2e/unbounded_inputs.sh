#!/usr/bin/env bash
# Unbounded inputs are refused with their figure before anything is allocated (issue 46 item 6):
# `study --repeat 1000000000` (before: 6.2 GB in 30 s) and `--same-prompt 4000000000` (before:
# std::bad_alloc); `--near-tie` nan, inf and -1 on every command that takes it; and `merge` of a
# shard whose header claims 18446744073709551615 selected exchanges (before: "missing
# 18446744073709551605 of 18446744073709551615"). Each exits 2 naming the flag or the file. The
# 10 GB ShareGPT string is tests/production/unbounded_sharegpt.sh.
. "$(dirname "$0")/lib.sh"

"$RETRACE" import "$ROOT/traces/gold-intents.jsonl" --out "$WORK/in.rtrace" 2>/dev/null
target=http://127.0.0.1:9  # never contacted: the refusals come first

# The bound is over what the binary takes to start (`--version`): 10 MiB in the release build, 220
# MiB under ASan, whose runtime maps its shadow and the 300 MB binary's debug sections at start.
/usr/bin/time -f '%M' -o "$WORK/rss.kib" "$RETRACE" --version >/dev/null
start_kib=$(tail -1 "$WORK/rss.kib")
refused() {  # refused WHAT TEXT CMD...: CMD exits 2 and says TEXT on stderr, within a bounded RSS
  local what=$1 text=$2 status=0; shift 2
  /usr/bin/time -f '%M' -o "$WORK/rss.kib" "$@" >/dev/null 2>"$WORK/err" || status=$?
  check_eq "$status" 2 "$what exits 2"
  check_contains "$WORK/err" "$text" "$what says why"
  local grew=$(( $(tail -1 "$WORK/rss.kib") - start_kib ))
  (( grew < 190 * 1024 )) || fail "$what took $(( grew / 1024 )) MiB over the binary's start before refusing"
}

refused "study --repeat 1000000000" "the study would make 4000000001 runs" \
  "$RETRACE" study "$WORK/in.rtrace" --target "$target" --concurrency 1,2 --cache cold,warm \
  --repeat 1000000000 --out "$WORK/s1"
[[ ! -e "$WORK/s1/plan.json" ]] || fail "a refused study wrote its plan"
refused "study --same-prompt 4000000000" "--same-prompt 4000000000: more than 1000000 requests a run" \
  "$RETRACE" study "$WORK/in.rtrace" --target "$target" --same-prompt 4000000000 --out "$WORK/s2"
for value in nan inf -1; do
  refused "study --near-tie $value" "expected a finite margin of 0 or more nats" \
    "$RETRACE" study "$WORK/in.rtrace" --target "$target" --near-tie "$value" --out "$WORK/s3"
  refused "diff --near-tie $value" "expected a finite margin of 0 or more nats" \
    "$RETRACE" diff "$WORK/in.rtrace" "$WORK/in.rtrace" --near-tie "$value"
done

# merge: a shard's header edited to claim UINT64_MAX selected exchanges.
start_listening SIM "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off
"$RETRACE" replay "$WORK/in.rtrace" --target "$SIM_URL" --out "$WORK/shard0.rtrace" --shard 0/2 --limit 10 -c 2 \
  >/dev/null 2>"$WORK/replay.err" || { cat "$WORK/replay.err" >&2; fail "the shard's replay failed"; }
"$RETRACE" export "$WORK/shard0.rtrace" | python3 -c '
import json, sys
for line in sys.stdin:
    row = json.loads(line)
    if "header" in row:
        settings = json.loads(row["header"]["settings"])
        settings["selected"] = 18446744073709551615
        row["header"]["settings"] = json.dumps(settings)
    print(json.dumps(row))' >"$WORK/crafted.jsonl"
"$RETRACE" import "$WORK/crafted.jsonl" --from export --out "$WORK/crafted.rtrace" 2>"$WORK/import.err" ||
  { cat "$WORK/import.err" >&2; fail "import --from export of the crafted shard"; }
status=0
"$RETRACE" merge "$WORK/crafted.rtrace" --out "$WORK/merged.rtrace" >/dev/null 2>"$WORK/merge.err" || status=$?
check_eq "$status" 2 "merge of a shard with a crafted selected count"
check_contains "$WORK/merge.err" 'its "selected" 18446744073709551615 is more exchanges than any run sends' \
  "merge names the damaged count"
if grep -q "missing 18446744073709551605" "$WORK/merge.err"; then fail "merge printed the wrapped count"; fi
echo "PASS unbounded_inputs"
