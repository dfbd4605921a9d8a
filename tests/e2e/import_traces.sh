#!/usr/bin/env bash
# Public serving traces: a Mooncake-format file (gzip) and an Azure-format file (zstd), written
# here, are imported (the format told from the first line), replayed on their recorded clock at
# --speed 10 against retrace serve, and checked: every request answered, rows sharing a hash id
# share byte-identical prompt blocks, and every prompt has the trace's token count by serve's own
# /tokenize. How late each request went out against its intended offset is printed, not asserted.
. "$(dirname "$0")/lib.sh"

start_listening SIM "$RETRACE" serve --listen 127.0.0.1:0

cat >"$WORK/mooncake.jsonl" <<'ROWS'
{"timestamp": 0, "input_length": 600, "output_length": 4, "hash_ids": [1, 2]}
{"timestamp": 0, "input_length": 530, "output_length": 3, "hash_ids": [1, 3]}
{"timestamp": 100, "input_length": 64, "output_length": 5, "hash_ids": [4]}
{"timestamp": 300, "input_length": 520, "output_length": 2, "hash_ids": [1, 5]}
ROWS
gzip -n "$WORK/mooncake.jsonl"
cat >"$WORK/azure.csv" <<'ROWS'
TIMESTAMP,ContextTokens,GeneratedTokens
2023-11-16 18:17:03.9799600,120,7
2023-11-16 18:17:03.9799600,33,4
2023-11-16 18:17:04.1123456,250,6
ROWS
zstd -q --rm "$WORK/azure.csv"

"$RETRACE" import "$WORK/mooncake.jsonl.gz" --out "$WORK/mooncake.rtrace" \
  --tokenizer-url "$SIM_URL/tokenize" 2>"$WORK/import.err" || { cat "$WORK/import.err" >&2; fail "mooncake import"; }
check_contains "$WORK/import.err" "imported 4 requests" "mooncake import summary"
check_contains "$WORK/import.err" "(mooncake)" "mooncake told from its first line"
"$RETRACE" import "$WORK/azure.csv.zst" --out "$WORK/azure.rtrace" 2>"$WORK/import.err" \
  || { cat "$WORK/import.err" >&2; fail "azure import"; }
check_contains "$WORK/import.err" "(azure)" "azure told from its first line"
settings() { "$RETRACE" export "$1" | jq -r 'select(.header) | .header.settings | fromjson | .prompt_tokens'; }
check_eq "$(settings "$WORK/mooncake.rtrace")" exact "mooncake prompt lengths with a tokenizer"
check_eq "$(settings "$WORK/azure.rtrace")" approximate "azure prompt lengths without one"

ex() { "$RETRACE" export "$1" | jq -c 'select(.exchange) | .exchange'; }

for name in mooncake azure; do
  # --- prompts have the trace's token counts, by the simulator's own tokenizer.
  expected=$([[ $name == mooncake ]] && echo "600 530 64 520" || echo "120 33 250")
  counted=""
  while read -r exchange; do
    count=$(printf '%s' "$exchange" | jq -c '{prompt: (.request.body | fromjson | .messages[-1].content)}' \
      | curl -sf -d @- -H 'content-type: application/json' "$SIM_URL/tokenize" | jq .count)
    counted+="${counted:+ }$count"
  done < <(ex "$WORK/$name.rtrace")
  check_eq "$counted" "$expected" "$name prompt token counts by /tokenize"

  # --- replay on the recorded clock, ten times faster.
  "$RETRACE" replay "$WORK/$name.rtrace" --target "$SIM_URL" --timing recorded --speed 10 \
    --out "$WORK/$name.run.rtrace" >"$WORK/$name.replay.out" 2>&1 \
    || { cat "$WORK/$name.replay.out" >&2; fail "$name replay"; }
  ex "$WORK/$name.run.rtrace" >"$WORK/$name.run.jsonl"
  check_eq "$(jq -r 'select(.error.kind == "none" and .response.status == 200) | .id' "$WORK/$name.run.jsonl" | wc -l)" \
    "$(ex "$WORK/$name.rtrace" | wc -l)" "$name requests answered"
  echo "$name: send-time slip against the intended offset (ms), not asserted:"
  jq -r '"  exchange \(.source_id): intended \(.intended_send_ns / 1e6) ms, slip \((.actual_send_ns - .intended_send_ns) / 1e6) ms"' \
    "$WORK/$name.run.jsonl"
done

# --- the intended offsets are the trace's, divided by the speed (Azure: 132.3856 ms / 10).
check_eq "$(jq -r '.intended_send_ns' "$WORK/azure.run.jsonl" | sort -n | paste -sd' ')" "0 0 13238560" \
  "azure intended offsets at --speed 10"
check_eq "$(jq -r '.intended_send_ns' "$WORK/mooncake.run.jsonl" | sort -n | paste -sd' ')" "0 0 10000000 30000000" \
  "mooncake intended offsets at --speed 10"

# --- rows sharing hash id 1 share their first 512-token block byte for byte; the text after it,
# from different ids, differs.
python3 - "$WORK/mooncake.run.jsonl" <<'EOF' || fail "shared hash_ids"
import json, sys
prompts = {}
for line in open(sys.argv[1]):
    exchange = json.loads(line)
    prompts[exchange["source_id"]] = json.loads(exchange["request"]["body"])["messages"][-1]["content"].split(" ")
shared = [prompts[i] for i in (1, 2, 4)]
assert all(p[:512] == shared[0][:512] for p in shared), "the block of hash id 1 differs between rows"
assert len({" ".join(p[512:520]) for p in shared}) == 3, "blocks of different ids are equal"
assert prompts[3][:8] != shared[0][:8], "hash id 4 starts like hash id 1"
print("shared hash_ids: the first 512 words of rows 1, 2 and 4 are identical; the rest differs")
EOF

# --- a malformed row: an error with its line number, and no output file.
printf '%s\n' '{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [1]}' \
  '{"timestamp": 3, "input_length": "many", "output_length": 1}' >"$WORK/bad.jsonl"
if "$RETRACE" import "$WORK/bad.jsonl" --out "$WORK/bad.rtrace" 2>"$WORK/bad.err"; then fail "a bad row imported"; fi
check_contains "$WORK/bad.err" "bad.jsonl:2: \"input_length\" must be a whole number" "bad row's line number"
[[ ! -e "$WORK/bad.rtrace" && ! -e "$WORK/bad.rtrace.tmp" ]] || fail "a failed import left a file"

# --- a file of no known format: the error names the formats.
printf 'when,what\n1,2\n' >"$WORK/unknown.csv"
if "$RETRACE" import "$WORK/unknown.csv" --out "$WORK/unknown.rtrace" 2>"$WORK/unknown.err"; then fail "an unknown format imported"; fi
check_contains "$WORK/unknown.err" "--from mooncake, bailian, azure, burstgpt, sharegpt, jsonl, openai-batch or export" "unknown format error"

stop "$SIM_PID" || fail "serve exited non-zero"
echo "import_traces: ok"
