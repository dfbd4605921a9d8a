#!/usr/bin/env bash
# llama-server's Prometheus /metrics (started with --metrics) is scraped before and after a
# replay into the run's header, and `retrace inspect` shows it: the counters grew by the run. The
# same header identifies the server as llama.cpp, and --token-ids auto asked it for logprob ids.
# The run's series (#42): llama-server's requests_processing kept as `running`, scraped over the
# run, each exchange joined to it; and llama.cpp's per-request `timings` stored as typed fields
# (the server's TTFT and the prompt tokens it computed), shown by `stats`.
. "$(dirname "$0")/lib.sh"

start_llama LLAMA -np 4 -c 2048
"$RETRACE" import "$ROOT/traces/gold-intents.jsonl" --out "$WORK/gold.rtrace" 2>/dev/null || fail "import"
"$RETRACE" replay "$WORK/gold.rtrace" --target "$LLAMA_URL" -c 4 --limit 4 --set stream=true --out "$WORK/run.rtrace" \
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

"$RETRACE" export --metrics "$WORK/run.rtrace" >"$WORK/series.jsonl" || fail "export --metrics"
"$RETRACE" export "$WORK/run.rtrace" >"$WORK/run.jsonl" || fail "export"
"$RETRACE" stats "$WORK/run.rtrace" >"$WORK/stats.out" || fail "stats"
python3 - "$WORK/series.jsonl" "$WORK/run.jsonl" <<'PY' || fail "the series and the server's timings"
import json, sys
series = [json.loads(l) for l in open(sys.argv[1])]
names = {s.get("series") for s in series}
assert {"running", "waiting"} <= names, sorted(n for n in names if n)[:40]
assert len({s["t_us"] for s in series}) >= 2, "fewer than two scrapes"   # the baseline and the last
exchanges = [json.loads(l)["exchange"] for l in open(sys.argv[2]) if l.startswith('{"exchange"')]
assert len(exchanges) == 4, len(exchanges)
for e in exchanges:
    server = e.get("server", {})
    assert server.get("source") == "llamacpp", server
    assert server["ttft_ms"] > 0 and server["decode_ms"] >= 0 and server["prompt_computed"] >= 0, server
    assert server["cached_tokens"] >= 0, server
    assert e["server_state"]["at_send"]["scrape_ns"] >= 0 and e["server_state"]["at_send"]["running"] >= 0, e["server_state"]
PY
check_contains "$WORK/stats.out" "TTFT − server's" "stats shows the client's TTFT minus the server's"
echo "PASS real.metrics_header"
