#!/usr/bin/env bash
# release-only: three runs against a batching simulator (32 s under ASan); under the sanitizers the page's parsing and the join run in prometheus_test, llm_exposition_test and server_state_test, and the scrape loop end to end in e2e.record_scrape and e2e.shadow_scrape
# The server's /metrics over a run, kept in the run's trace (#42), and the outputs by requests in
# flight at send:
# 1. retrace serve --batch-variance: a run at concurrency 2 (batches of 1-2, the unloaded split)
#    and one at 16 against a concurrency-1 baseline. diff --json's by_in_flight: nothing differs
#    at 1-2 in flight in the first; in the second the differing outputs were sent at >= 3 but for
#    the run's first two sends (which went out at 1 and 2 and then ran in the batch the other
#    fourteen joined), and the terminal report says where they were. export --metrics: the
#    baseline scrape before the first send, one after the last answer, the sim's `running` and
#    the client's in-flight line; each exchange's server state at send, first token and end.
# 2. A target without /metrics: one line on stderr, the run goes on and is whole.
# 3. A /metrics of 50 MB: bounded (8 MiB read at most), said, the run goes on.
# 4. Malformed text and a counter reset: both in the scrapes' notes, the deltas clamped.
. "$(dirname "$0")/lib.sh"

COUNT=32
import_numbered "$WORK/source.rtrace" $COUNT \
  '{"request":{"model":"retrace-sim","prompt":"Question %d: what should we do about the order?","max_tokens":48,"temperature":0,"ignore_eos":true,"logprobs":5,"stream":true}}' \
  --endpoint completions

replay() {  # URL CONCURRENCY OUT [FLAGS...]
  local url=$1 c=$2 out=$3; shift 3
  "$RETRACE" replay "$WORK/source.rtrace" --target "$url" -c "$c" -o "$WORK/$out" "$@" >/dev/null 2>"$WORK/$out.err" \
    || { cat "$WORK/$out.err" >&2; fail "replay to $out at concurrency $c"; }
}

start_listening ALONE "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off --batch-variance
start_listening VARIED "$RETRACE" serve --listen 127.0.0.1:0 --batch-variance
replay "$ALONE_URL" 1 base.rtrace
replay "$VARIED_URL" 2 c2.rtrace
replay "$VARIED_URL" 16 c16.rtrace --scrape-interval 20ms

status=0
"$RETRACE" diff --json "$WORK/base.rtrace" "$WORK/c2.rtrace" "$WORK/c16.rtrace" >"$WORK/diff.json" 2>"$WORK/diff.err" || status=$?
[[ $status == 1 ]] || { cat "$WORK/diff.err" >&2; fail "diff exited $status, expected 1 (c16 differs)"; }
python3 - "$WORK/diff.json" <<'PY' || fail "by_in_flight"
import json, sys
runs = json.load(open(sys.argv[1]))["runs"]
c2, c16 = runs[0]["by_in_flight"], runs[1]["by_in_flight"]
assert c2 and all(b["in_flight_to"] <= 2 for b in c2), c2
assert sum(b["compared"] for b in c2) == 32 and all(b["differing"] == 0 for b in c2), c2
assert all(b["differ_rate_upper95"] is not None for b in c2 + c16), c16
differing = sum(b["differing"] for b in c16)
assert differing == runs[1]["divergent"] and differing > 0, (differing, runs[1]["divergent"])
low = [b for b in c16 if b["in_flight_to"] <= 2]
assert sum(b["compared"] for b in low) <= 2, low          # only the run's first two sends
assert sum(b["differing"] for b in c16 if b["in_flight_from"] >= 3) >= differing - 2, c16
assert sum(b["compared"] for b in c16) == 32, c16
PY
"$RETRACE" diff "$WORK/base.rtrace" "$WORK/c2.rtrace" >"$WORK/diff-c2.out" 2>&1 || fail "c2 diff is not identical"
"$RETRACE" diff "$WORK/base.rtrace" "$WORK/c16.rtrace" >"$WORK/diff-c16.out" 2>&1 && fail "c16 diff is identical"
check_contains "$WORK/diff-c16.out" "differing outputs were sent with ≥ " "the terminal report's load sentence"

"$RETRACE" export --metrics "$WORK/c16.rtrace" >"$WORK/series.jsonl" || fail "export --metrics"
"$RETRACE" export --metrics --csv "$WORK/c16.rtrace" >"$WORK/series.csv" || fail "export --metrics --csv"
"$RETRACE" export "$WORK/c16.rtrace" >"$WORK/c16.jsonl" || fail "export"
python3 - "$WORK/series.jsonl" "$WORK/c16.jsonl" "$WORK/series.csv" <<'PY' || fail "the series"
import json, sys
series = [json.loads(l) for l in open(sys.argv[1])]
exchanges = [json.loads(l)["exchange"] for l in open(sys.argv[2]) if '"exchange"' in l[:20]]
assert len(exchanges) == 32
first_send = min(e["actual_send_ns"] for e in exchanges) / 1000
last_end = max(e["actual_send_ns"] + e["end_ns"] for e in exchanges) / 1000
times = sorted({s["t_us"] for s in series})
assert times[0] <= first_send, (times[0], first_send)      # the baseline
assert times[-1] >= last_end, (times[-1], last_end)         # the sample after the last answer
assert len(times) >= 3, times
running = [s["value"] for s in series if s["series"] == "running"]
assert len(running) == len(times) and max(running) >= 3, running
client = [s["value"] for s in series if s["series"] == "client_in_flight"]
assert client[0] == 0 and max(client) >= 3, client
counters = [s for s in series if s["kind"] == "counter" and s["t_us"] == times[0]]
assert counters and all(s["value"] == 0 for s in counters), counters  # deltas from the baseline
assert all(e["in_flight_at_send"] >= 1 and e["in_flight_max"] >= e["in_flight_at_send"] for e in exchanges)
assert max(e["in_flight_max"] for e in exchanges) == 16, [e["in_flight_max"] for e in exchanges]
csv = open(sys.argv[3]).read().splitlines()
assert csv[0] == "t_us,series,kind,value" and len(csv) == len(series) + 1, csv[:3]
# The join (format 1.6): each exchange's server state at send, first token and end is the latest
# scrape at or before each moment, with its time; the sim exposes no preemptions counter.
scrape_times = {s["t_us"] * 1000 for s in series}
for e in exchanges:
    state = e["server_state"]
    send = e["actual_send_ns"]
    for moment, at in (("at_send", send), ("at_first_token", send + e["first_byte_ns"]), ("at_end", send + e["end_ns"])):
        sample = state[moment]
        assert 0 <= sample["scrape_ns"] <= at and sample["running"] >= 0 and sample["waiting"] >= 0, (moment, state, at)
        assert any(abs(sample["scrape_ns"] - t) < 1000 for t in scrape_times), (moment, sample)
    assert state["at_send"]["scrape_ns"] <= state["at_first_token"]["scrape_ns"] <= state["at_end"]["scrape_ns"], state
    assert state["preemptions"] is None, state
assert max(e["server_state"]["at_end"]["running"] for e in exchanges) >= 3, [e["server_state"] for e in exchanges]
PY
# The stock tools read the new records (Record.metrics), and a trace from before 1.5 exports as it
# did: no in-flight fields, no series.
zstd -dc "$WORK/c16.rtrace" | capnp decode "$ROOT/format/trace.capnp" Record >"$WORK/decoded.txt" || fail "capnp decode"
check_eq "$(grep -c '^( *exchange = ' "$WORK/decoded.txt")" 32 "capnp decode: exchanges"
[[ $(grep -c '^( *metrics = ' "$WORK/decoded.txt") -ge 3 ]] || fail "capnp decode: metrics records"
"$RETRACE" export "$ROOT/traces/gold-intents.rtrace" >"$WORK/gold.jsonl" || fail "export of the shipped trace"
grep -q in_flight "$WORK/gold.jsonl" && fail "an old trace grew in-flight fields"
"$RETRACE" export --metrics "$ROOT/traces/gold-intents.rtrace" >"$WORK/gold.series" 2>/dev/null || fail "export --metrics of an old trace"
[[ ! -s "$WORK/gold.series" ]] || fail "an old trace printed a series"

# A run without a series: --no-scrape.
replay "$VARIED_URL" 2 quiet.rtrace --no-scrape
"$RETRACE" export --metrics "$WORK/quiet.rtrace" >"$WORK/quiet.jsonl" 2>"$WORK/quiet.err" || fail "export --metrics of an unscraped run"
[[ ! -s "$WORK/quiet.jsonl" ]] || fail "an unscraped run printed a series"
check_contains "$WORK/quiet.err" "holds no /metrics series" "an empty series said"

# 2-4: an upstream of our own making.
for mode in none huge odd; do
  rm -f "$WORK/UP.out"  # the last upstream's "listening on" line is not this one's
  start_listening UP python3 "$(dirname "$0")/metrics_upstream.py" 0 "$mode"
  replay "$UP_URL" 2 "$mode.rtrace" --no-stream --scrape-interval 10ms --requests 40
  "$RETRACE" export "$WORK/$mode.rtrace" | grep -c '"exchange"' >"$WORK/$mode.count"
  check_eq "$(cat "$WORK/$mode.count")" 40 "$mode: every exchange kept"
  "$RETRACE" export --metrics "$WORK/$mode.rtrace" >"$WORK/$mode.series" 2>/dev/null || fail "$mode: export --metrics"
  curl -s "$UP_URL/scrapes" >"$WORK/$mode.scrapes"
  case $mode in
    none)
      check_eq "$(grep -c 'usable' "$WORK/$mode.rtrace.err")" 1 "no /metrics: one line"
      check_contains "$WORK/$mode.rtrace.err" "no usable $UP_URL/metrics (HTTP 404); the run goes on" "no /metrics said"
      [[ $(json "$WORK/$mode.scrapes" 's.scrapes') -le 2 ]] || fail "no /metrics: asked again (the header's GET and the baseline only)"
      check_contains "$WORK/$mode.series" '"note":"HTTP 404"' "no /metrics: the baseline's note";;
    huge)
      check_contains "$WORK/$mode.rtrace.err" "passed 8 MiB and is not scraped; the run goes on" "50 MB said"
      [[ $(json "$WORK/$mode.scrapes" 's.scrapes') -le 2 ]] || fail "50 MB: asked again (the header's GET and the baseline only)"
      check_contains "$WORK/$mode.series" "passed 8 MiB and was not read" "50 MB: the note";;
    odd)
      grep -q "metrics" "$WORK/$mode.rtrace.err" && { cat "$WORK/$mode.rtrace.err" >&2; fail "odd: a usable page was said unusable"; }
      # What the server said of each exchange (vLLM's per-request metrics), typed in the trace.
      "$RETRACE" export "$WORK/$mode.rtrace" >"$WORK/$mode.jsonl" || fail "odd: export"
      grep -m1 '"exchange"' "$WORK/$mode.jsonl" >"$WORK/$mode.first"
      check_eq "$(json "$WORK/$mode.first" 'JSON.stringify(s.exchange.server)')" \
        '{"source":"vllm","queue_ms":2,"ttft_ms":3.5,"decode_ms":1.25,"e2e_ms":null,"prompt_computed":null,"cached_tokens":2}' \
        "odd: the server's own words"
      "$RETRACE" diff --json "$WORK/$mode.rtrace" "$WORK/$mode.rtrace" >"$WORK/$mode.self.json" || fail "odd: diff with itself"
      check_eq "$(json "$WORK/$mode.self.json" 's.runs[0].by_cache.map(b => [b.cache, b.compared, b.differing]).join(" ")')" \
        "hit,40,0" "odd: by_cache"

      python3 - "$WORK/$mode.series" "$WORK/$mode.scrapes" <<'PY' || fail "odd: resets and malformed lines"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
counts = json.load(open(sys.argv[2]))
# Every scrape says it is a probe (the header's GETs before and after the run may not).
assert counts["probes"] >= 3 and counts["scrapes"] - counts["probes"] in (0, 2), counts
deltas = [l["value"] for l in lines if l.get("series") == "odd_requests_total"]
assert deltas[:3] == [0, 100, 5], deltas   # 100 -> 200 -> 5: a reset counted from 0
notes = [l["note"] for l in lines if "note" in l]
assert any("counter reset" in n and "odd_requests_total" in n for n in notes), notes
assert all("1 malformed line skipped (line 9: " in n for n in notes), notes
# One kept-alive connection for the loop's GETs (the header's two GETs have their own).
assert counts["scrapes"] >= 6 and counts["connections"] <= 3, counts
# A histogram is read at the baseline and the last scrape only: its count moves once, by the
# pages served between them.
times = sorted({l["t_us"] for l in lines})
latency = [(l["t_us"], l["value"]) for l in lines if l.get("series") == "odd_latency_count"]
assert [t for t, _ in latency] == [times[0], times[-1]], (latency, times[0], times[-1])
assert latency[0][1] == 0 and latency[1][1] >= 3, latency
PY
      ;;
  esac
  stop "$UP_PID" || true
done
