#!/usr/bin/env bash
# The conventions every command shares (#11): one duration syntax (a bare number is refused with a
# hint naming the flag), no silent overwrites (never an input, an existing output only with
# --force), the flags a vLLM user types, streaming by default with the server's usage, and stats
# that count inference requests only.
. "$(dirname "$0")/lib.sh"

# refused NAME WANT CMD... : CMD exits 2 and says WANT on stderr.
refused() {
  local name=$1 want=$2; shift 2
  local status=0
  "$@" >"$WORK/refused.out" 2>"$WORK/refused.err" || status=$?
  check_eq "$status" 2 "$name: exit status"
  check_contains "$WORK/refused.err" "$want" "$name"
}

start_listening SIM "$RETRACE" serve --listen 127.0.0.1:0 --drain-timeout 2s
"$RETRACE" import "$ROOT/traces/gold-intents.jsonl" --out "$WORK/gold.rtrace" 2>/dev/null

# --- durations: the same syntax and the same hint for every duration flag of every command
refused "record --duration 2" "--duration: '2': give a unit, e.g. 2s or 2ms" \
  "$RETRACE" record --upstream "$SIM_URL" --out "$WORK/r.rtrace" --duration 2
refused "record --upstream-timeout 5" "--upstream-timeout: '5': give a unit" \
  "$RETRACE" record --upstream "$SIM_URL" --out "$WORK/r.rtrace" --upstream-timeout 5
refused "record --drain-timeout 0.3" "--drain-timeout: '0.3': give a unit" \
  "$RETRACE" record --upstream "$SIM_URL" --out "$WORK/r.rtrace" --drain-timeout 0.3
refused "record --flush-interval 0ms" "must be at least 1ms" \
  "$RETRACE" record --upstream "$SIM_URL" --out "$WORK/r.rtrace" --flush-interval 0ms
refused "record --flush-ms (renamed)" "--flush-ms was renamed; use --flush-interval" \
  "$RETRACE" record --upstream "$SIM_URL" --out "$WORK/r.rtrace" --flush-ms 100
refused "serve --drain-timeout-ms (renamed)" "--drain-timeout-ms was renamed; use --drain-timeout with a unit, e.g. --drain-timeout 5s" \
  "$RETRACE" serve --listen 127.0.0.1:0 --drain-timeout-ms 3000
refused "serve --drain-timeout 5x" "unknown unit 'x'" "$RETRACE" serve --listen 127.0.0.1:0 --drain-timeout 5x
refused "replay --timeout 30" "--timeout: '30': give a unit, e.g. 30s or 30ms" \
  "$RETRACE" replay "$WORK/gold.rtrace" --target "$SIM_URL" --out "$WORK/t.rtrace" -c 1 --timeout 30
refused "sweep --timeout 30" "give a unit" \
  "$RETRACE" sweep "$WORK/gold.rtrace" --target "$SIM_URL" --out "$WORK/sw0" --timeout 30
refused "bisect --timeout 30" "give a unit" \
  "$RETRACE" bisect --over concurrency --range 1..2 --trace "$WORK/gold.rtrace" --target "$SIM_URL" --timeout 30
refused "replay --window-from 10" "--window-from: '10': give a unit, e.g. 10s or 10ms" \
  "$RETRACE" replay "$WORK/gold.rtrace" --target "$SIM_URL" --out "$WORK/t.rtrace" --timing recorded --window-from 10
refused "replay --window-to 2x" "--window-to: '2x': unknown unit 'x'" \
  "$RETRACE" replay "$WORK/gold.rtrace" --target "$SIM_URL" --out "$WORK/t.rtrace" --timing recorded --window-to 2x
refused "replay --max-idle-gap 5" "--max-idle-gap: '5': give a unit" \
  "$RETRACE" replay "$WORK/gold.rtrace" --target "$SIM_URL" --out "$WORK/t.rtrace" --timing recorded --max-idle-gap 5
refused "sweep --duration 30" "--duration: '30': give a unit" \
  "$RETRACE" sweep "$WORK/gold.rtrace" --target "$SIM_URL" --out "$WORK/sw0" --duration 30
refused "stats --slo ttft:15" "--slo ttft '15': give a unit, e.g. 15s or 15ms" \
  "$RETRACE" stats "$WORK/gold.rtrace" --slo ttft:15
for path in r.rtrace t.rtrace sw0; do [[ ! -e "$WORK/$path" ]] || fail "a refused command wrote $path"; done
# Accepted with units. record stops by itself after --duration:
start_listening IDLE "$RETRACE" record --upstream "$SIM_URL" --out "$WORK/idle.rtrace" --listen 127.0.0.1:0 \
  --duration 1s --no-server-info
wait "$IDLE_PID" || fail "record did not exit 0 after --duration"
check_contains "$WORK/IDLE.err" "--duration elapsed" "record stopped by --duration"
start_listening PROXY "$RETRACE" record --upstream "$SIM_URL" --out "$WORK/rec.rtrace" --listen 127.0.0.1:0 \
  --max-exchanges 3 --upstream-timeout 500ms --drain-timeout 1s --flush-interval 250ms --no-server-info
curl -sS "$PROXY_URL/v1/models" >/dev/null
curl -sS "$PROXY_URL/metrics" >/dev/null
curl -sS -H 'content-type: application/json' -d '{"prompt":"Hi","max_tokens":4,"temperature":0}' \
  "$PROXY_URL/v1/completions" >/dev/null
wait "$PROXY_PID" || fail "record did not exit 0 after --max-exchanges"

# --- stats: only inference requests count; the rest is listed apart
"$RETRACE" stats "$WORK/rec.rtrace" --json >"$WORK/rec.stats.json"
check_eq "$(jq -r .exchanges "$WORK/rec.stats.json")" 1 "stats: inference requests"
check_eq "$(jq -r .completed "$WORK/rec.stats.json")" 1 "stats: completed"
check_eq "$(jq -c .other_requests "$WORK/rec.stats.json")" '{"GET /metrics":1,"GET /v1/models":1}' "stats: others apart"
"$RETRACE" stats "$WORK/rec.rtrace" >"$WORK/rec.stats.txt"
check_contains "$WORK/rec.stats.txt" "not inference       GET /metrics 1, GET /v1/models 1" "stats text: others apart"
"$RETRACE" stats "$WORK/gold.rtrace" >"$WORK/plan.stats.txt"
check_contains "$WORK/plan.stats.txt" "never sent          20" "a plan never sent says so"
grep -q "completed" "$WORK/plan.stats.txt" && fail "a plan never sent reports completed requests"

# --- no silent overwrites
cp "$WORK/gold.rtrace" "$WORK/in.rtrace"
before=$(sha256sum <"$WORK/in.rtrace")
refused "replay onto its input" "that is the input" \
  "$RETRACE" replay "$WORK/in.rtrace" --target "$SIM_URL" --out "$WORK/in.rtrace" -c 4
refused "replay onto its input with --force" "that is the input" \
  "$RETRACE" replay "$WORK/in.rtrace" --target "$SIM_URL" --out "$WORK/in.rtrace" -c 4 --force
ln "$WORK/in.rtrace" "$WORK/link.rtrace"
refused "replay onto a hard link of its input" "that is the input" \
  "$RETRACE" replay "$WORK/in.rtrace" --target "$SIM_URL" --out "$WORK/link.rtrace" -c 4 --force
refused "replay onto its input by another spelling" "that is the input" \
  "$RETRACE" replay "$WORK/in.rtrace" --target "$SIM_URL" --out "$WORK/./../$(basename "$WORK")/in.rtrace" -c 4 --force
check_eq "$(sha256sum <"$WORK/in.rtrace")" "$before" "the input is untouched"
"$RETRACE" replay "$WORK/in.rtrace" --target "$SIM_URL" --out "$WORK/run.rtrace" -c 4 >/dev/null
refused "replay onto an existing output" "already exists; choose another --out or add --force" \
  "$RETRACE" replay "$WORK/in.rtrace" --target "$SIM_URL" --out "$WORK/run.rtrace" -c 4
"$RETRACE" replay "$WORK/in.rtrace" --target "$SIM_URL" --out "$WORK/run.rtrace" -c 4 --force >/dev/null
refused "import onto an existing trace" "already exists" \
  "$RETRACE" import "$ROOT/traces/gold-intents.jsonl" --out "$WORK/in.rtrace"
"$RETRACE" import "$ROOT/traces/gold-intents.jsonl" --out "$WORK/in.rtrace" --force 2>/dev/null
refused "record onto an existing trace" "already exists" \
  "$RETRACE" record --upstream "$SIM_URL" --out "$WORK/run.rtrace" --listen 127.0.0.1:0
refused "report onto its input" "that is the input" "$RETRACE" report "$WORK/run.rtrace" -o "$WORK/run.rtrace" --force
"$RETRACE" report "$WORK/run.rtrace" -o "$WORK/run.html" >/dev/null
refused "report onto an existing page" "already exists" "$RETRACE" report "$WORK/run.rtrace" -o "$WORK/run.html"
mkdir "$WORK/busy" && touch "$WORK/busy/notes.txt"
refused "sweep into a non-empty directory" "already exists and is not empty" \
  "$RETRACE" sweep "$WORK/in.rtrace" --target "$SIM_URL" --out "$WORK/busy" -c 1 --repeat 1
refused "bisect into a non-empty directory" "already exists and is not empty" \
  "$RETRACE" bisect --over concurrency --range 1..2 --trace "$WORK/in.rtrace" --target "$SIM_URL" --out "$WORK/busy"
cp "$WORK/in.rtrace" "$WORK/busy/c1-r1.rtrace"
refused "sweep whose run would replace its input" "that is the input" \
  "$RETRACE" sweep "$WORK/busy/c1-r1.rtrace" --target "$SIM_URL" --out "$WORK/busy" -c 1 --repeat 1 --force

# --- the flags a vLLM user types
ex() { "$RETRACE" export "$1" | jq -c 'select(.exchange) | .exchange'; }
settings() { "$RETRACE" export "$1" | jq -c 'select(.header) | .header.settings | fromjson'; }
"$RETRACE" replay "$WORK/in.rtrace" --target "$SIM_URL" --out "$WORK/mc.rtrace" --max-concurrency 3 >/dev/null
check_eq "$(settings "$WORK/mc.rtrace" | jq -c '[.schedule.kind, .schedule.concurrency]')" '["concurrency",3]' "--max-concurrency is -c"
"$RETRACE" replay "$WORK/in.rtrace" --target "$SIM_URL" --out "$WORK/inf.rtrace" --request-rate inf >/dev/null
check_eq "$(settings "$WORK/inf.rtrace" | jq -c '[.schedule.kind, .schedule.concurrency]')" '["concurrency",20]' "--request-rate inf: all at once"
"$RETRACE" replay "$WORK/in.rtrace" --target "$SIM_URL" --out "$WORK/inf4.rtrace" --request-rate inf --max-concurrency 4 >/dev/null
check_eq "$(settings "$WORK/inf4.rtrace" | jq -c '[.schedule.kind, .schedule.concurrency]')" '["concurrency",4]' "--request-rate inf with --max-concurrency"
"$RETRACE" replay "$WORK/in.rtrace" --target "$SIM_URL" --out "$WORK/gamma.rtrace" --request-rate 200 --burstiness 0.5 >/dev/null
check_eq "$(settings "$WORK/gamma.rtrace" | jq -c '[.schedule.kind, .schedule.rate, .schedule.arrival, .schedule.burstiness]')" \
  '["rate",200,"gamma",0.5]' "--burstiness alone selects gamma arrivals"
refused "--burstiness with poisson arrivals" "--burstiness is the shape of gamma arrivals" \
  "$RETRACE" replay "$WORK/in.rtrace" --target "$SIM_URL" --out "$WORK/x.rtrace" --rate 5 --arrival poisson --burstiness 0.5
refused "--request-rate with --max-concurrency" "give exactly one schedule" \
  "$RETRACE" replay "$WORK/in.rtrace" --target "$SIM_URL" --out "$WORK/x.rtrace" --request-rate 5 --max-concurrency 2
refused "--request-rate fast" "--rate: 'fast' is not requests per second" \
  "$RETRACE" replay "$WORK/in.rtrace" --target "$SIM_URL" --out "$WORK/x.rtrace" --request-rate fast

# --- streaming by default, with the server's usage; --no-stream and --set stream=false opt out
ex "$WORK/mc.rtrace" >"$WORK/mc.jsonl"
check_eq "$(jq -r '.response.streamed' "$WORK/mc.jsonl" | sort -u)" true "replayed chat streams by default"
check_eq "$(jq -r '.request.body | fromjson | .stream_options.include_usage' "$WORK/mc.jsonl" | sort -u)" true "include_usage asked for"
check_eq "$(jq -r 'select(.usage.completion_tokens < 0) | .id' "$WORK/mc.jsonl" | wc -l)" 0 "every streamed exchange has usage"
"$RETRACE" stats "$WORK/mc.rtrace" --json >"$WORK/mc.stats.json"
check_eq "$(jq -r .ttft_ms.count "$WORK/mc.stats.json")" 20 "TTFT measured for every request"
check_eq "$(jq -r .output_tokens_source "$WORK/mc.stats.json")" "server usage" "stats: output tokens from usage"
usage_sum=$(jq -s 'map(.usage.completion_tokens) | add' "$WORK/mc.jsonl")
check_eq "$(jq -r .output_tokens "$WORK/mc.stats.json")" "$usage_sum" "stats: output tokens are the usage sum"
"$RETRACE" inspect "$WORK/mc.rtrace" --json >"$WORK/mc.inspect.json"
check_eq "$(jq -r .counts.tokens "$WORK/mc.inspect.json")" "$usage_sum" "inspect agrees with stats"
"$RETRACE" cat "$WORK/mc.rtrace" >"$WORK/mc.cat.txt"
check_contains "$WORK/mc.cat.txt" "(server usage)" "cat names the source"
for way in "--no-stream" "--set stream=false"; do
  rm -f "$WORK/ns.rtrace"
  # shellcheck disable=SC2086
  "$RETRACE" replay "$WORK/in.rtrace" --target "$SIM_URL" --out "$WORK/ns.rtrace" -c 4 $way >/dev/null
  ex "$WORK/ns.rtrace" >"$WORK/ns.jsonl"
  check_eq "$(jq -r '.response.streamed' "$WORK/ns.jsonl" | sort -u)" false "$way: not streamed"
  check_eq "$(jq -r '.request.body | fromjson | has("stream_options")' "$WORK/ns.jsonl" | sort -u)" false "$way: no stream_options"
done
"$RETRACE" replay "$WORK/in.rtrace" --target "$SIM_URL" --out "$WORK/st.rtrace" -c 4 --set stream=true >/dev/null
check_eq "$(ex "$WORK/st.rtrace" | jq -r '.response.streamed' | sort -u)" true "--set stream=true still streams"

echo "cli_flags: ok"
