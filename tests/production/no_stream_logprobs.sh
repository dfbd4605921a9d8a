#!/usr/bin/env bash
# 1,000 non-streamed answers with logprobs, of 16 to ~520 tokens (bodies of a few KB to ~250 KB,
# far past the decoder's 16 KiB arena scratch), through one replay at -c 4: every one completes,
# with every token and its logprobs (#28: a reused arena's doubling block size lost most of
# them to bad_alloc after a few hundred).
. "$(dirname "$0")/lib.sh"

python3 - "$WORK/answers.jsonl" <<'PY'
import json, sys
with open(sys.argv[1], "w") as out:
    for i in range(1000):
        body = {"messages": [{"role": "user", "content": "question %d: tell me a long story" % i}],
                "max_tokens": 16 + (i * 37) % 505, "ignore_eos": True, "temperature": 0,
                "logprobs": True, "top_logprobs": 5}
        out.write(json.dumps({"request": body, "id": "a%d" % i}) + "\n")
PY
"$RETRACE" import "$WORK/answers.jsonl" --out "$WORK/answers.rtrace" 2>/dev/null
start_listening SIM "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off
"$RETRACE" replay "$WORK/answers.rtrace" --target "$SIM_URL" --out "$WORK/run.rtrace" -c 4 \
  --no-stream --json >"$WORK/run.json"
check_eq "$(completed "$WORK/run.json")" 1000 "every non-streamed answer completed"
# Every answer whole: as many tokens, each with its 5 alternatives, as it asked for.
"$RETRACE" export "$WORK/run.rtrace" | jq -r 'select(.exchange) | .exchange |
  [(.request.body | fromjson | .max_tokens), (.choices[0].tokens | length),
   ([.choices[0].tokens[] | select((.top // []) | length == 5)] | length), .response.streamed] | @tsv' \
  >"$WORK/shape.tsv"
check_eq "$(wc -l <"$WORK/shape.tsv")" 1000 "every exchange written"
check_eq "$(awk '$1 != $2 || $2 != $3 || $4 != "false"' "$WORK/shape.tsv" | wc -l)" 0 \
  "every answer has all its tokens and their logprobs, not streamed"
check_eq "$(awk '$1 > 500' "$WORK/shape.tsv" | wc -l | awk '$1 > 0 {print "yes"}')" yes \
  "answers of over 500 tokens among them"
echo ok
