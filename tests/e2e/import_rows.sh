#!/usr/bin/env bash
# What imported rows carry, end to end: a Mooncake or Bailian trace's send offsets are its time
# span in `inspect`; a lone UTF-16 surrogate escape (valid JSON, no character) in JSONL, in
# ShareGPT and in a trace row is read as U+FFFD and counted, and neither stops the import nor
# makes it blame the format.
. "$(dirname "$0")/lib.sh"

cat >"$WORK/mooncake.jsonl" <<'ROWS'
{"timestamp": 0, "input_length": 60, "output_length": 4, "hash_ids": [1]}
{"timestamp": 1500, "input_length": 53, "output_length": 3, "hash_ids": [2]}
{"timestamp": 2750, "input_length": 64, "output_length": 5, "hash_ids": [3]}
ROWS
"$RETRACE" import "$WORK/mooncake.jsonl" --out "$WORK/mooncake.rtrace" 2>/dev/null
"$RETRACE" inspect "$WORK/mooncake.rtrace" >"$WORK/inspect.txt"
check_contains "$WORK/inspect.txt" "time span     2.750 s of send offsets" "Mooncake's time span from its offsets"
check_eq "$("$RETRACE" inspect "$WORK/mooncake.rtrace" --json | jq -r .time_span.seconds)" 2.75 \
  "the time span in inspect --json"
cat >"$WORK/bailian.jsonl" <<'ROWS'
{"chat_id": 1, "parent_chat_id": -1, "timestamp": 10.0, "input_length": 40, "output_length": 4, "type": "text"}
{"chat_id": 2, "parent_chat_id": 1, "timestamp": 12.5, "input_length": 80, "output_length": 2, "type": "te\ud83dxt"}
ROWS
"$RETRACE" import "$WORK/bailian.jsonl" --out "$WORK/bailian.rtrace" 2>"$WORK/bailian.err"
check_contains "$WORK/bailian.err" "replaced 1 lone UTF-16 surrogate escape" "Bailian's lone surrogate counted"
check_contains <("$RETRACE" inspect "$WORK/bailian.rtrace") "time span     2.500 s of send offsets" \
  "Bailian's time span from its offsets"
# A dataset has no send times: no span is made up.
printf '{"prompt": "a"}\n{"prompt": "b"}\n' >"$WORK/plain.jsonl"
"$RETRACE" import "$WORK/plain.jsonl" --out "$WORK/plain.rtrace" 2>/dev/null
check_contains <("$RETRACE" inspect "$WORK/plain.rtrace") "time span     none" "a dataset has no time span"

# --- lone surrogates: the first line of a JSONL file (where the format is told), and ShareGPT.
printf '{"prompt": "scraped \\ud83d dump"}\n{"prompt": "a pair \\ud83d\\ude00 is fine"}\n{"prompt": "\\udc00"}\n' \
  >"$WORK/scraped.jsonl"
"$RETRACE" import "$WORK/scraped.jsonl" --out "$WORK/scraped.rtrace" 2>"$WORK/scraped.err" \
  || { cat "$WORK/scraped.err" >&2; fail "a lone surrogate stopped the import"; }
check_contains "$WORK/scraped.err" "imported 3 requests" "every line imported"
check_contains "$WORK/scraped.err" "replaced 2 lone UTF-16 surrogate escapes" "the lone ones counted"
check_eq "$("$RETRACE" export "$WORK/scraped.rtrace" | jq -r 'select(.exchange) | .exchange.request.body | fromjson |
  .messages[0].content' | head -1)" "scraped � dump" "U+FFFD in the request"
printf '[{"id": "x", "conversations": [{"from": "human", "value": "hi \\ud83d"}, {"from": "gpt", "value": "ok"}]}]' \
  >"$WORK/sharegpt.json"
"$RETRACE" import "$WORK/sharegpt.json" --out "$WORK/sharegpt.rtrace" 2>"$WORK/sharegpt.err"
check_contains "$WORK/sharegpt.err" "replaced 1 lone UTF-16 surrogate escape" "ShareGPT's lone surrogate counted"
echo ok
