#!/usr/bin/env bash
# Format 1.7's derived tokens (format/token_deriver.hpp): the golden traces of every earlier minor
# version in tests/data/golden (written by the 1.4, 1.5 and 1.6 binaries; their `export` and
# `stats --json` as the 1.6 binary read them) read bit for bit the same; a replay against the
# simulator writes 1.7 with every token stored by default, and with --derive-tokens its streamed
# tokens derived, which `inspect` names, the stock `zstd -dc | capnp decode` reads, and `diff`
# finds identical to the 1.6 golden run of the same requests; record the same, both ways; export
# lines imported again are written with their tokens stored and export the same. With logprobs
# (top 2, chat and completions), a run with --derive-tokens (whose live decode converts no logprob
# value and builds no alternative) exports the same tokens, logprobs and alternatives as a run
# that stores them, replay's and record's alike.
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

# A run of the golden runs' requests (the simulator is deterministic), by default: 1.7 stamped,
# every token stored (no exchange derived), the same outputs as the 1.6 golden run.
start_listening SIM "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off --reasoning 3
"$RETRACE" replay "$golden/golden-1.6-chat.rtrace" --target "$SIM_URL" --token-ids logprobs -c 1 \
  --out "$WORK/stored.rtrace" >/dev/null 2>"$WORK/replay.err" || { cat "$WORK/replay.err" >&2; fail "replay"; }
"$RETRACE" inspect "$WORK/stored.rtrace" >"$WORK/stored-inspect.txt"
check_contains "$WORK/stored-inspect.txt" "format        1.7" "inspect names the version of a default run"
zstd -dc "$WORK/stored.rtrace" | capnp decode "$ROOT/format/trace.capnp" Record >"$WORK/stored-decoded.txt"
check_eq "$(grep -c '^( *exchange = ' "$WORK/stored-decoded.txt")" 5 "capnp decode of the default run: exchange records"
check_eq "$(grep -c 'tokensDerived = true' "$WORK/stored-decoded.txt" || true)" 0 "a default run derives no exchange"
# Token structs, counted by their field hasLogprob (an Alternative has none): not by lines, whose
# breaking follows each token's printed length, which its arrival offset's digits change.
stored_tokens() { zstd -dc "$1" | capnp decode "$ROOT/format/trace.capnp" Record | grep -o 'hasLogprob = ' | wc -l; }
check_eq "$(stored_tokens "$WORK/stored.rtrace")" "$(stored_tokens "$golden/golden-1.6-chat.rtrace")" \
  "a default run stores every token as the 1.6 run did"
"$RETRACE" diff "$golden/golden-1.6-chat.rtrace" "$WORK/stored.rtrace" --fail-on any >"$WORK/stored.diff" \
  || { cat "$WORK/stored.diff" >&2; fail "diff of the default run against the 1.6 golden run failed"; }

# The same with --derive-tokens: its streamed tokens derived, named in the header's settings, and
# the same outputs.
"$RETRACE" replay "$golden/golden-1.6-chat.rtrace" --target "$SIM_URL" --token-ids logprobs -c 1 \
  --derive-tokens --out "$WORK/new.rtrace" >/dev/null 2>"$WORK/replay.err" || { cat "$WORK/replay.err" >&2; fail "replay"; }
"$RETRACE" inspect "$WORK/new.rtrace" >"$WORK/inspect.txt"
check_contains "$WORK/inspect.txt" "format        1.7" "inspect names the version"
check_contains "$WORK/inspect.txt" '"derive_tokens":true' "the header's settings record --derive-tokens"
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
# Every token's id, bytes, logprob and alternatives, without arrivals (they differ run to run).
tokens_of() { "$RETRACE" export "$1" | jq -c 'select(.exchange) | .exchange.choices | walk(if type == "object" then del(.offset_ns) else . end)'; }
check "replay --derive-tokens exports the stored run's tokens logprobs and alternatives (chat)" \
  cmp -s <(tokens_of "$WORK/stored.rtrace") <(tokens_of "$WORK/new.rtrace")
check_contains "$WORK/new.jsonl" '"top":[{' "the derived run's export has alternatives"
for mode in stored derived; do
  flag=(); [[ $mode == derived ]] && flag=(--derive-tokens)
  "$RETRACE" replay "$golden/golden-1.6-completions.rtrace" --target "$SIM_URL" -c 1 "${flag[@]}" \
    --out "$WORK/completions-$mode.rtrace" >/dev/null 2>"$WORK/replay.err" || { cat "$WORK/replay.err" >&2; fail "replay ($mode)"; }
done
check "replay --derive-tokens exports the stored run's tokens logprobs and alternatives (completions)" \
  cmp -s <(tokens_of "$WORK/completions-stored.rtrace") <(tokens_of "$WORK/completions-derived.rtrace")
check_eq "$(tokens_of "$WORK/completions-derived.rtrace" | grep -o '"logprob":-' | wc -l)" \
  "$(tokens_of "$golden/golden-1.6-completions.rtrace" | grep -o '"logprob":-' | wc -l)" \
  "the derived completions run has every logprob of the golden run"
before=$(zstd -dc "$WORK/stored.rtrace" | wc -c)
after=$(zstd -dc "$WORK/new.rtrace" | wc -c)
check "the derived run: $after bytes before compression, fewer than the default run's $before" test "$after" -lt "$before"

# record --derive-tokens: a streamed completion through the proxy is written derived (and by
# default stored), each run's header settings saying which.
request='{"model":"retrace-sim","prompt":"a story about the sea","max_tokens":24,"stream":true,"ignore_eos":true,"temperature":0,"logprobs":2}'
for mode in default derive; do
  flag=(); [[ $mode == derive ]] && flag=(--derive-tokens)
  start_listening PROXY "$RETRACE" record --upstream "$SIM_URL" --listen 127.0.0.1:0 \
    --out "$WORK/rec-$mode.rtrace" "${flag[@]}"
  curl -sfN "$PROXY_URL/v1/completions" -H 'Content-Type: application/json' -d "$request" >"$WORK/rec-$mode.sse" \
    || fail "the streamed request through record ($mode)"
  check_contains "$WORK/rec-$mode.sse" "[DONE]" "the stream through record ($mode) ended"
  stop "$PROXY_PID" || fail "record ($mode) did not exit 0 on SIGTERM"
  zstd -dc "$WORK/rec-$mode.rtrace" | capnp decode "$ROOT/format/trace.capnp" Record >"$WORK/rec-$mode.txt"
  "$RETRACE" export "$WORK/rec-$mode.rtrace" >"$WORK/rec-$mode.jsonl"
  check_eq "$(jq -c 'select(.exchange) | [.exchange.choices[].tokens[]] | length' "$WORK/rec-$mode.jsonl")" 24 \
    "record ($mode): the answer's tokens read back"
  check_eq "$(jq -r 'select(.header) | .header.settings | fromjson | .derive_tokens' "$WORK/rec-$mode.jsonl")" \
    "$([[ $mode == derive ]] && echo true || echo false)" "record ($mode): the header's settings"
done
check_eq "$(grep -c 'tokensDerived = true' "$WORK/rec-derive.txt")" 1 "record --derive-tokens derives the stream"
check_eq "$(grep -c 'tokensDerived = true' "$WORK/rec-default.txt" || true)" 0 "record stores the tokens by default"
check "record: the same tokens logprobs and alternatives either way" \
  cmp -s <(tokens_of "$WORK/rec-default.rtrace") <(tokens_of "$WORK/rec-derive.rtrace")
check_contains "$WORK/rec-derive.jsonl" '"top":[{' "record --derive-tokens: the alternatives read back"

# Export lines imported again: written as the default writes (tokens stored), read back the same.
for name in golden-1.6-chat golden-1.6-completions; do
  "$RETRACE" import "$WORK/$name.golden.jsonl" --out "$WORK/$name.again.rtrace" 2>/dev/null || fail "import of $name"
  check "$name imported again stores its tokens" bash -c "! zstd -dc '$WORK/$name.again.rtrace' | capnp decode '$ROOT/format/trace.capnp' Record | grep -q 'tokensDerived = true'"
  check "$name imported again exports the same exchanges" cmp -s <(tail -n +2 "$WORK/$name.golden.jsonl") <("$RETRACE" export "$WORK/$name.again.rtrace" | tail -n +2)
done
echo "format derived: ok"
