#!/usr/bin/env bash
# llama-server's Prometheus /metrics (started with --metrics) is scraped before and after a
# replay into the run's header, and `retrace inspect` shows it: the counters grew by the run. The
# same header identifies the server as llama.cpp, and --token-ids auto asked it for logprob ids.
. "$(dirname "$0")/lib.sh"

start_llama LLAMA -np 4 -c 2048
"$RETRACE" import "$ROOT/traces/gold-intents.jsonl" --out "$WORK/gold.rtrace" 2>/dev/null || fail "import"
"$RETRACE" replay "$WORK/gold.rtrace" --target "$LLAMA_URL" -c 4 --limit 4 --out "$WORK/run.rtrace" \
  >"$WORK/replay.out" 2>"$WORK/replay.err" || { cat "$WORK/replay.err" >&2; fail "replay"; }

"$RETRACE" inspect "$WORK/run.rtrace" >"$WORK/inspect.out" || fail "inspect"
check_contains "$WORK/inspect.out" "llamacpp:tokens_predicted_total" "inspect shows llama-server's metrics"
"$RETRACE" export "$WORK/run.rtrace" | head -1 >"$WORK/header.json"
python3 - "$WORK/header.json" <<'PY' || fail "the metrics in the run header"
import json, re, sys
info = json.loads(json.load(open(sys.argv[1]))["header"]["server_info"])
def counter(text, name):
    found = re.search(rf"^llamacpp:{name} (\S+)$", text or "", re.M)
    assert found, f"llamacpp:{name} not in the scrape: {(text or '')[:400]!r}"
    return float(found.group(1))
before, after = info["metrics_before"], info["metrics_after"]
for name in ("prompt_tokens_total", "tokens_predicted_total", "n_decode_total"):
    assert counter(after, name) > counter(before, name), f"llamacpp:{name} did not grow during the run"
assert info["server"]["kind"] == "llama.cpp", f'identified as {info["server"]}'
assert info["preflight"]["token_ids"]["mode"] == "llamacpp", info["preflight"]["token_ids"]
PY
echo "PASS real.metrics_header"
