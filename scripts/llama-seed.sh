#!/usr/bin/env bash
# The seed experiment against a llama.cpp server: the 20 gold questions (traces/gold-intents.jsonl)
# and the 20 open-ended prompts (traces/open-ended.jsonl) at 256 tokens each, swept at concurrency
# 1, 16 and 32 with llama.cpp's token ids and logprobs, streamed. Writes DIR/seed.rtrace (the plan)
# and the sweep (runs, summary.json, summary.md) into DIR, replacing what an earlier run left there;
# prints the summary table.
# Usage: scripts/llama-seed.sh URL DIR [more retrace sweep options, e.g. --repeat 3 or --json]
# $RETRACE names the retrace binary (default: build/release/retrace).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RETRACE=${RETRACE:-$ROOT/build/release/retrace}
(( $# >= 2 )) || { sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
url=$1 dir=$2; shift 2

mkdir -p "$dir"
{ cat "$ROOT/traces/gold-intents.jsonl"; jq -c '.max_tokens = 256' "$ROOT/traces/open-ended.jsonl"; } >"$dir/seed.jsonl"
"$RETRACE" import "$dir/seed.jsonl" --out "$dir/seed.rtrace" --force >/dev/null
exec "$RETRACE" sweep "$dir/seed.rtrace" --target "$url" --concurrency 1,16,32 \
  --token-ids llamacpp --set stream=true --match normalized --out "$dir" --force "$@"
