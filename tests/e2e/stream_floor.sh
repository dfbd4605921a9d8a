#!/usr/bin/env bash
# bench/stream_floor_bench, the least reader of streamed answers that bench/client_roofline.sh
# measures beside replay (issue 44), reads right: its framer passes its self-test (chunked and
# Content-Length responses split at every byte boundary and fed a byte at a time, two responses in
# one piece, broken framing refused); against real `retrace serve` it counts the same tokens as
# replay reports for the same request bytes, with a 64 KiB and a 4 KiB read buffer; and it frames
# the sized (Content-Length) answers of non-streamed requests. Skipped when the benches are not
# built (-DRETRACE_BENCH=OFF).
# release-only: a check of a bench tool in bench/, no code of the product's; the ASan tier has nothing of its to cover
. "$(dirname "$0")/lib.sh"

READER=$(dirname "$RETRACE")/bench/stream_floor_bench
[[ -x $READER ]] || { echo "no $READER: the benches are not built; skipped"; exit 77; }

"$READER" --self-test >"$WORK/self.out" 2>&1 || { cat "$WORK/self.out" >&2; fail "the framer's self-test"; }
check_contains "$WORK/self.out" "ok" "the framer's self-test passes"

start_listening serve "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off
for i in $(seq 1 40); do
  printf '{"request":{"model":"retrace-sim","prompt":"Tell a long story, part %d.","max_tokens":%d,"temperature":0,"stream":true,"ignore_eos":true}}\n' \
    "$i" $((100 + i * 7))
done >"$WORK/stream.jsonl"
"$RETRACE" import "$WORK/stream.jsonl" --endpoint completions --out "$WORK/stream.rtrace" >/dev/null 2>&1
# replay's own requests (logprobs asked for, as replay does against serve), sent again by the reader
"$RETRACE" replay "$WORK/stream.rtrace" --target "$serve_URL" --out "$WORK/run.rtrace" -c 8 --json >"$WORK/run.json"
check_eq "$(jq -r .completed "$WORK/run.json")" 40 "replay completed every request"
"$RETRACE" export "$WORK/run.rtrace" | jq -c '.exchange | select(.) | .request | {method, target, body}' >"$WORK/requests.jsonl"
check_contains "$WORK/requests.jsonl" '\"logprobs\":' "the requests are replay's, logprobs asked for"
tokens=$(jq -r .output_tokens "$WORK/run.json")
check_eq "$tokens" $((40 * 100 + 7 * 40 * 41 / 2)) "replay's tokens"
for buffer in 65536 4096; do
  "$READER" "$serve_URL" "$WORK/requests.jsonl" -c 8 --buffer "$buffer" >"$WORK/reader.json"
  check_eq "$(jq -r '[.completed, .errors, .tokens, .done] | join(" ")' "$WORK/reader.json")" "40 0 $tokens 40" \
    "the reader's completed, errors, tokens and [DONE]s with a $buffer-byte buffer"
done

# Non-streamed: Content-Length bodies, no SSE events.
head -5 "$WORK/requests.jsonl" | jq -c '.body |= (fromjson | .stream = false | del(.stream_options) | tojson)' >"$WORK/sized.jsonl"
"$READER" "$serve_URL" "$WORK/sized.jsonl" -c 2 --buffer 64 >"$WORK/sized.json"
check_eq "$(jq -r '[.completed, .errors, .tokens] | join(" ")' "$WORK/sized.json")" "5 0 0" "sized answers are framed"

# A request file that is not one names the file, the line and how to make one.
echo '{"nope":1}' >"$WORK/bad.jsonl"
status=0
"$READER" "$serve_URL" "$WORK/bad.jsonl" 2>"$WORK/bad.err" || status=$?
check_eq "$status" 2 "a bad request file exits 2"
check_contains "$WORK/bad.err" "bad.jsonl:1: not a {\"method\", \"target\", \"body\"} object" "the bad line is named"
echo "ok"
