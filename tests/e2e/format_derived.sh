#!/usr/bin/env bash
# Format 1.7's derived tokens (format/token_deriver.hpp): the golden traces of every earlier minor
# version in tests/data/golden (written by the 1.4, 1.5 and 1.6 binaries; their `export` and
# `stats --json` as the 1.6 binary read them) read bit for bit the same; a replay against the
# simulator writes 1.7 with its streamed tokens derived, which `inspect` names, the stock
# `zstd -dc | capnp decode` reads, and `diff` finds identical to the 1.6 golden run of the same
# requests; export lines imported again are written derived and export the same.
. "$(dirname "$0")/lib.sh"

golden=$ROOT/tests/data/golden
for trace in "$golden"/golden-1.*.rtrace; do
  name=$(basename "$trace" .rtrace)
  "$RETRACE" export "$trace" >"$WORK/$name.jsonl"
  zstd -dc "$golden/$name.export.jsonl.zst" >"$WORK/$name.golden.jsonl"
  check "export of $name reads as the binaries before 1.7 read it" cmp -s "$WORK/$name.golden.jsonl" "$WORK/$name.jsonl"
  (cd "$golden" && "$RETRACE" stats "$name.rtrace" --json) >"$WORK/$name.stats.json"
  check "stats of $name reads as before" cmp -s "$golden/$name.stats.json" "$WORK/$name.stats.json"
done
"$RETRACE" diff "$golden/golden-1.4-chat.rtrace" "$golden/golden-1.6-chat.rtrace" >"$WORK/old.diff"
check_contains "$WORK/old.diff" "0 of 5 differ" "the 1.4 and 1.6 golden runs of the same requests"

# A 1.7 run of the golden runs' requests (the simulator is deterministic): its streamed tokens
# derived, and the same outputs as the 1.6 golden run.
start_listening SIM "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off --reasoning 3
"$RETRACE" replay "$golden/golden-1.6-chat.rtrace" --target "$SIM_URL" --token-ids logprobs -c 1 \
  --out "$WORK/new.rtrace" >/dev/null 2>"$WORK/replay.err" || { cat "$WORK/replay.err" >&2; fail "replay"; }
"$RETRACE" inspect "$WORK/new.rtrace" >"$WORK/inspect.txt"
check_contains "$WORK/inspect.txt" "format        1.7" "inspect names the version"
zstd -dc "$WORK/new.rtrace" | capnp decode "$ROOT/format/trace.capnp" Record >"$WORK/decoded.txt"
check_eq "$(grep -c '^( *exchange = ' "$WORK/decoded.txt")" 5 "capnp decode: exchange records"
check_eq "$(grep -c 'tokensDerived = true' "$WORK/decoded.txt")" 5 "capnp decode: every streamed exchange derived"
check_contains "$WORK/decoded.txt" "tokenCount = 7" "capnp decode: the stored token counts"
"$RETRACE" diff "$golden/golden-1.6-chat.rtrace" "$WORK/new.rtrace" --fail-on any >"$WORK/new.diff" \
  || { cat "$WORK/new.diff" >&2; fail "diff of the 1.7 run against the 1.6 golden run failed"; }
check_contains "$WORK/new.diff" "0 of 5 differ" "derived tokens diff as the stored ones"
"$RETRACE" export "$WORK/new.rtrace" >"$WORK/new.jsonl"
check_eq "$(jq -c 'select(.exchange) | [.exchange.choices[].tokens[].bytes] | length' "$WORK/new.jsonl" | paste -sd,)" \
  "$(jq -c 'select(.exchange) | [.exchange.choices[].tokens[].bytes] | length' "$WORK/golden-1.6-chat.jsonl" | paste -sd,)" \
  "export of the derived run has every token"

# Export lines imported again: written derived (smaller before compression), read back the same.
for name in golden-1.6-chat golden-1.6-completions; do
  "$RETRACE" import "$WORK/$name.golden.jsonl" --out "$WORK/$name.again.rtrace" 2>/dev/null || fail "import of $name"
  check "$name imported again is derived" bash -c "zstd -dc '$WORK/$name.again.rtrace' | capnp decode '$ROOT/format/trace.capnp' Record | grep -q 'tokensDerived = true'"
  check "$name imported again exports the same exchanges" cmp -s <(tail -n +2 "$WORK/$name.golden.jsonl") <("$RETRACE" export "$WORK/$name.again.rtrace" | tail -n +2)
  before=$(zstd -dc "$golden/$name.rtrace" | wc -c)
  after=$(zstd -dc "$WORK/$name.again.rtrace" | wc -c)
  check "$name: $after bytes before compression, fewer than 1.6's $before" test "$after" -lt "$before"
done
echo "format derived: ok"
